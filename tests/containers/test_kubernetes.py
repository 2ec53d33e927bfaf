"""deploy/kubernetes, rendered as kustomize would and validated against the Kubernetes API's schemas
(kubernetes-validate, strict: unknown fields fail); then its web Deployment run for real with
``podman kube play`` against a database and broker in containers."""

from __future__ import annotations

import subprocess

import kubernetes_validate
import pytest

from tests.conftest import skip_unless
from tests.containers.kubernetes import render
from tests.containers.topology import pause_binary_missing

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
        "Deployment/reasoningbank-bulk-worker",
        "Deployment/reasoningbank-mcp",
        "Deployment/reasoningbank-web",
        "Deployment/reasoningbank-webhook-worker",
        "Deployment/reasoningbank-worker",
        "HorizontalPodAutoscaler/reasoningbank-web",
        "HorizontalPodAutoscaler/reasoningbank-worker",
        "Job/reasoningbank-migrate",
        "Service/reasoningbank-mcp",
        "Service/reasoningbank-web",
    ]


def _by_name(name: str) -> dict:
    return next(obj for obj in render() if obj["metadata"]["name"] == name and obj["kind"] != "Service")


@pytest.mark.parametrize(
    "name",
    [
        "reasoningbank-web",
        "reasoningbank-worker",
        "reasoningbank-webhook-worker",
        "reasoningbank-bulk-worker",
        "reasoningbank-beat",
    ],
)
def test_the_app_waits_for_the_migrate_job_and_runs_hardened(name):
    pod = _by_name(name)["spec"]["template"]["spec"]
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert "migrate --check" in " ".join(pod["initContainers"][0]["command"])
    for container in pod["containers"]:
        assert container["securityContext"]["readOnlyRootFilesystem"] is True
        assert container["resources"]["requests"]["cpu"]  # what the autoscaler divides by


def test_every_queue_has_one_worker_deployment():
    consumers: dict[str, list[str]] = {}
    for obj in render():
        if obj["kind"] != "Deployment":
            continue
        for container in obj["spec"]["template"]["spec"]["containers"]:
            env = {entry["name"]: entry.get("value") for entry in container.get("env", [])}
            if container.get("args") == ["worker"]:
                for queue in env["WORKER_QUEUES"].split(","):
                    consumers.setdefault(queue, []).append(obj["metadata"]["name"])
    assert consumers == {
        "celery": ["reasoningbank-worker"],
        "maintenance": ["reasoningbank-worker"],
        "webhooks": ["reasoningbank-webhook-worker"],
        "bulk": ["reasoningbank-bulk-worker"],
    }


def test_web_is_probed_on_healthz_and_readyz():
    web = _by_name("reasoningbank-web")["spec"]["template"]["spec"]["containers"][0]
    assert web["livenessProbe"]["httpGet"]["path"] == "/healthz"
    assert web["readinessProbe"]["httpGet"]["path"] == "/readyz"


@pytest.fixture
def pause_binary():
    why = pause_binary_missing()
    skip_unless(not why, f"{why}: the Kubernetes manifests are not played")


def test_the_rendered_web_deployment_runs_under_podman_kube_play_and_becomes_ready(built, pause_binary, tmp_path):
    """What podman 4.3 cannot play is changed, and only that: the pod shares the host's network (so no
    ports, and the probes name the port number), and the init container runs on its own first (kube play
    fails to remove a finished init container there). The ConfigMap is played as is; the Secret is a
    podman secret of the same name, with the optional DATABASE_REPLICA_URL on the compose file's replica: the
    pod's /readyz says its reports read it, within the ConfigMap's RB_REPLICA_MAX_LAG_SECONDS."""
    import base64
    import json

    import httpx
    import yaml

    from tests.containers import images
    from tests.containers.images import podman
    from tests.containers.topology import ContainerTopology
    from tests.harness import free_port
    from tests.production.topology import wait_until

    top = ContainerTopology(prefix="rbct-kube")
    port = free_port()
    objects = render(image=images.APP)
    config = next(obj for obj in objects if obj["kind"] == "ConfigMap")
    web = next(obj for obj in objects if obj["kind"] == "Deployment" and obj["metadata"]["name"] == "reasoningbank-web")
    pod = web["spec"]["template"]["spec"]
    init = pod.pop("initContainers")[0]
    container = pod["containers"][0]
    container.pop("ports")
    for probe in ("startupProbe", "livenessProbe", "readinessProbe"):
        container[probe]["httpGet"]["port"] = port
    web["spec"]["replicas"] = 1
    played = tmp_path / "web.yaml"
    secret = tmp_path / "secret.json"
    try:
        for part in (top.postgres.service, top.redis.service):
            part.create_and_start()
        for part in (top.postgres.service, top.redis.service):
            wait_until(part.healthy, timeout=90, what=f"{part.name} to be healthy", interval=0.5)
        # The optional read replica (the compose file's): its URL in the Secret, as docs/kubernetes.md says.
        replica = top.postgres.start_replica(top.compose, free_port())
        config["data"].update({"REDIS_URL": top.redis.url, "PORT": str(port), "ALLOWED_HOSTS": "localhost,127.0.0.1"})
        values = {"SECRET_KEY": "k" * 50, "DATABASE_URL": top.postgres.url, "DATABASE_REPLICA_URL": replica.url}
        secret.write_text(json.dumps({key: base64.b64encode(value.encode()).decode() for key, value in values.items()}))
        podman("secret", "rm", "reasoningbank-secrets", check=False)
        podman("secret", "create", "reasoningbank-secrets", str(secret))
        env = [f"--env={key}={value}" for key, value in {**config["data"], **values}.items()]

        def init_step() -> subprocess.CompletedProcess:
            return podman(
                "run", "--rm", "--no-healthcheck", *env, "--entrypoint", init["command"][0], images.APP,
                *init["command"][1:], check=False, timeout=120,
            )  # fmt: skip

        top.run_migrate()  # the migrate Job's container: same image, args ["migrate"]
        assert init_step().returncode == 0
        played.write_text(yaml.safe_dump_all([config, web]))
        done = podman("kube", "play", "--network", "host", str(played), check=False)
        assert done.returncode == 0, done.stderr

        def ready() -> bool:
            try:
                return httpx.get(f"http://127.0.0.1:{port}/readyz", headers={"Host": "localhost"}, timeout=5).is_success
            except httpx.HTTPError:
                return False

        wait_until(ready, timeout=180, what="the played web pod's /readyz")
        # From this host: the checks' details. The reports read the replica, within the ConfigMap's lag limit.
        answer = httpx.get(f"http://127.0.0.1:{port}/readyz", headers={"Host": "localhost"}, timeout=30).json()
        detail = answer["checks"]["replica"]["detail"]
        assert (detail["state"], detail["reports_read"]) == ("streaming", "replica"), answer
        assert f"RB_REPLICA_MAX_LAG_SECONDS={config['data']['RB_REPLICA_MAX_LAG_SECONDS']}" in detail["why"], answer
        names = podman("ps", "--format", "{{.Names}}").stdout.split()
        assert "reasoningbank-web-pod-0-web" in names
        inspect = json.loads(podman("inspect", "reasoningbank-web-pod-0-web").stdout)[0]
        assert inspect["HostConfig"]["ReadonlyRootfs"] is True
        assert inspect["Config"]["User"].split(":")[0] == "10001"
    finally:
        podman("kube", "down", str(played), check=False)
        podman("secret", "rm", "reasoningbank-secrets", check=False)
        top.stop()
