"""What ``kubectl kustomize deploy/kubernetes`` renders, for the fields that kustomization uses
(``resources``, ``images``, ``labels``): no kustomize binary is installable from the registries CI
reaches. Imports neither pytest nor Django."""

from __future__ import annotations

import copy
from pathlib import Path

import yaml

DEPLOY = Path(__file__).resolve().parents[2] / "deploy" / "kubernetes"
SUPPORTED = {"apiVersion", "kind", "resources", "images", "labels"}


def _containers(obj: dict) -> list[dict]:
    spec = obj.get("spec", {})
    pod = spec.get("template", {}).get("spec", {}) if obj["kind"] in {"Deployment", "Job"} else {}
    return [*pod.get("initContainers", []), *pod.get("containers", [])]


def render(folder: Path = DEPLOY, *, image: str | None = None) -> list[dict]:
    """Every object, with the kustomization's image and labels applied (``image`` replaces the image)."""
    kustomization = yaml.safe_load((folder / "kustomization.yaml").read_text())
    unknown = set(kustomization) - SUPPORTED
    if unknown:
        raise ValueError(f"kustomization fields this renderer does not apply: {sorted(unknown)}")
    objects = [
        copy.deepcopy(doc)
        for name in kustomization["resources"]
        for doc in yaml.safe_load_all((folder / name).read_text())
        if doc
    ]
    images = {entry["name"]: entry for entry in kustomization.get("images", [])}
    for obj in objects:
        for group in kustomization.get("labels", []):
            obj.setdefault("metadata", {}).setdefault("labels", {}).update(group["pairs"])
        for container in _containers(obj):
            entry = images.get(container["image"].split(":")[0])
            if image:
                container["image"] = image
            elif entry:
                container["image"] = f"{entry.get('newName', entry['name'])}:{entry.get('newTag', 'latest')}"
    return objects
