"""The production image, as built from docker/Dockerfile: no torch at run time (only its export stage has
it), a non-root user, a health check, and a clear one-line stop when its configuration is missing."""

from __future__ import annotations

import json

import pytest

from tests.containers import images
from tests.containers.images import podman
from tests.containers.topology import ContainerTopology
from tests.production.topology import TopologyError


def _python(code: str) -> str:
    done = podman("run", "--rm", "--no-healthcheck", "--entrypoint", "python", images.APP, "-c", code)
    return done.stdout.strip()


def test_the_runtime_image_has_no_torch_and_is_much_smaller_than_its_export_stage(built):
    assert _python("import importlib.util; print(importlib.util.find_spec('torch'))") == "None"
    images.build_app(images.EXPORT_STAGE, target="export")  # cached layers: the stage the runtime left behind
    sizes = {image: images.image_size_mb(image) for image in (images.APP, images.EXPORT_STAGE)}
    print(f"image sizes (MB): {sizes}; build times (s): {images.TIMINGS}")
    assert sizes[images.APP] < sizes[images.EXPORT_STAGE] / 2, sizes


def test_it_runs_as_a_non_root_user_with_a_health_check(built):
    assert _python("import os; print(os.getuid(), os.getgid())") == "10001 10001"
    image = json.loads(podman("image", "inspect", images.APP).stdout)[0]
    assert image["User"] == "app"
    assert image["Healthcheck"]["Test"] == ["CMD", "python", "/app/docker/healthcheck.py"]


@pytest.mark.parametrize("missing", ["SECRET_KEY", "DATABASE_URL"])
@pytest.mark.parametrize("role", ["web", "worker", "migrate"])
def test_a_missing_setting_stops_the_container_with_one_clear_line(built, missing, role):
    env = {"SECRET_KEY": "k" * 50, "DATABASE_URL": "postgres://u:p@127.0.0.1:1/db"}
    del env[missing]
    args = [f"--env={key}={value}" for key, value in env.items()]
    done = podman("run", "--rm", "--no-healthcheck", *args, images.APP, role, check=False)
    assert done.returncode == 78
    assert done.stdout == ""
    assert done.stderr.splitlines() == [
        f"reasoningbank: {missing} is not set; a production container needs SECRET_KEY and DATABASE_URL"
        " in its environment (docs/production.md)"
    ]


def test_a_failed_migration_leaves_web_and_workers_down_and_says_why(built):
    top = ContainerTopology(prefix="rbct-migfail")
    # The database exists but the migrate step is pointed at one that does not.
    top.extra_env = {"DATABASE_URL": top.postgres.url.rsplit("/", 1)[0] + "/no_such_database"}
    with pytest.raises(TopologyError) as failure:
        top.start()
    assert "migrate exited 1; web and workers stay down" in str(failure.value)
    assert 'database "no_such_database" does not exist' in str(failure.value)
    assert top.web is None and top.worker_services == []
    assert podman("container", "exists", "rbct-migfail-web", check=False).returncode == 1
