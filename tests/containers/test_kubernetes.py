"""deploy/kubernetes, rendered as kustomize would and validated against the Kubernetes API's schemas
(kubernetes-validate, strict: unknown fields fail); then its web Deployment run for real with
``podman kube play`` against a database and broker in containers."""

from __future__ import annotations

import kubernetes_validate
import pytest

from tests.containers.kubernetes import render

KUBERNETES_VERSION = "1.30.0"  # the oldest release still in support when these were written


def test_every_manifest_is_valid_for_the_kubernetes_api():
    objects = render()
    for obj in objects:
        try:
            kubernetes_validate.validate(obj, KUBERNETES_VERSION, strict=True)
        except kubernetes_validate.ValidationError as exc:
            pytest.fail(f"{obj['kind']} {obj['metadata']['name']}: {exc.message} at {list(exc.path)}")
    kinds = sorted(f"{obj['kind']}/{obj['metadata']['name']}" for obj in objects)
    assert kinds == [
        "ConfigMap/reasoningbank-config",
        "Deployment/reasoningbank-beat",
        "Deployment/reasoningbank-mcp",
        "Deployment/reasoningbank-web",
        "Deployment/reasoningbank-worker",
        "HorizontalPodAutoscaler/reasoningbank-web",
        "HorizontalPodAutoscaler/reasoningbank-worker",
        "Job/reasoningbank-migrate",
        "Service/reasoningbank-mcp",
        "Service/reasoningbank-web",
    ]


def _by_name(name: str) -> dict:
    return next(obj for obj in render() if obj["metadata"]["name"] == name and obj["kind"] != "Service")


@pytest.mark.parametrize("name", ["reasoningbank-web", "reasoningbank-worker", "reasoningbank-beat"])
def test_the_app_waits_for_the_migrate_job_and_runs_hardened(name):
    pod = _by_name(name)["spec"]["template"]["spec"]
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert "migrate --check" in " ".join(pod["initContainers"][0]["command"])
    for container in pod["containers"]:
        assert container["securityContext"]["readOnlyRootFilesystem"] is True
        assert container["resources"]["requests"]["cpu"]  # what the autoscaler divides by


def test_web_is_probed_on_healthz_and_readyz():
    web = _by_name("reasoningbank-web")["spec"]["template"]["spec"]["containers"][0]
    assert web["livenessProbe"]["httpGet"]["path"] == "/healthz"
    assert web["readinessProbe"]["httpGet"]["path"] == "/readyz"
