"""Migrations are their own step: the compose file runs a one-shot
`migrate` service every app service waits for, and the web role does not
migrate by itself (unless RB_MIGRATE_ON_START=1, for a single-container run).
No Docker engine here: the compose file is parsed, and docker/entrypoint.sh is
run for real with stand-ins for `python` and `gunicorn` that record their
command lines."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
import yaml
from django.conf import settings

DOCKER = Path(__file__).resolve().parents[2] / "docker"
APP_SERVICES = ["web", "worker", "webhook-worker", "bulk-worker", "beat"]


@pytest.fixture(scope="module")
def compose() -> dict:
    return yaml.safe_load((DOCKER / "compose.yaml").read_text())


def test_a_one_shot_migrate_service_runs_once_after_the_database_is_healthy(compose):
    migrate = compose["services"]["migrate"]
    assert migrate["command"] == ["migrate"]
    assert migrate["restart"] == "no"  # one shot: never restarted once it exited 0
    assert migrate["depends_on"] == {"db": {"condition": "service_healthy"}}
    assert migrate["environment"]["DATABASE_URL"] == compose["services"]["web"]["environment"]["DATABASE_URL"]


@pytest.mark.parametrize("service", APP_SERVICES)
def test_web_workers_and_beat_start_only_after_migrate_completed(compose, service):
    depends = compose["services"][service]["depends_on"]
    assert depends["migrate"] == {"condition": "service_completed_successfully"}


def _run_entrypoint(tmp_path: Path, *args: str, **env: str) -> tuple[subprocess.CompletedProcess, list[str]]:
    """Run docker/entrypoint.sh with `python`, `gunicorn` and `celery` replaced by recorders; return the run and their
    command lines. SECRET_KEY and DATABASE_URL are set unless ``env`` sets them (to "" to leave one out)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    calls = tmp_path / "calls.txt"
    calls.write_text("")
    for name in ("python", "gunicorn", "celery"):
        stand_in = bin_dir / name
        stand_in.write_text(f'#!/bin/sh\necho "{name} $*" >> "{calls}"\n')
        stand_in.chmod(0o755)
    configured = {"SECRET_KEY": "k" * 50, "DATABASE_URL": "postgres://u:p@db:5432/reasoningbank"}
    environment = {"PATH": f"{bin_dir}:/usr/bin:/bin", "HOME": str(tmp_path), **configured, **env}
    done = subprocess.run(
        ["sh", str(DOCKER / "entrypoint.sh"), *args],
        env={key: value for key, value in environment.items() if value},
        capture_output=True,
        text=True,
        timeout=30,
    )
    return done, calls.read_text().splitlines()


def _entrypoint(tmp_path: Path, *args: str, **env: str) -> list[str]:
    done, calls = _run_entrypoint(tmp_path, *args, **env)
    assert done.returncode == 0, done.stderr
    return calls


def test_the_web_role_does_not_migrate_by_itself(tmp_path):
    calls = _entrypoint(tmp_path, "web")
    assert len(calls) == 1 and calls[0].startswith("gunicorn reasoningbank_site.wsgi:application "), calls
    assert "--workers 2" in calls[0]
    assert "--worker-class gthread" in calls[0]


def test_the_migrate_role_migrates_and_nothing_else(tmp_path):
    assert _entrypoint(tmp_path, "migrate") == ["python manage.py migrate --noinput"]


def test_a_single_container_run_migrates_first_with_rb_migrate_on_start(tmp_path):
    calls = _entrypoint(tmp_path, "web", RB_MIGRATE_ON_START="1")
    assert calls[0] == "python manage.py migrate --noinput"
    assert calls[1].startswith("gunicorn reasoningbank_site.wsgi:application "), calls
    assert len(calls) == 2


def test_every_queue_has_one_worker_service_with_its_pool(compose):
    consumers: dict[str, list[str]] = {}
    for name, spec in compose["services"].items():
        if spec.get("command") == ["worker"]:
            for queue in spec["environment"]["WORKER_QUEUES"].split(","):
                consumers.setdefault(queue, []).append(name)
    assert consumers == {
        "celery": ["worker"],
        "maintenance": ["worker"],
        "webhooks": ["webhook-worker"],
        "bulk": ["bulk-worker"],
    }
    assert sorted(consumers) == sorted(queue.name for queue in settings.CELERY_TASK_QUEUES)
    assert compose["services"]["webhook-worker"]["environment"]["WORKER_POOL"] == "threads"


def test_the_worker_role_consumes_the_queues_it_is_given_else_every_queue(tmp_path):
    given = _entrypoint(tmp_path, "worker", WORKER_QUEUES="webhooks", WORKER_POOL="threads", WORKER_CONCURRENCY="8")
    assert given == [
        "celery -A reasoningbank_site worker --loglevel INFO --concurrency 8 --pool threads --queues webhooks"
    ]
    assert _entrypoint(tmp_path, "worker") == [
        "celery -A reasoningbank_site worker --loglevel INFO --concurrency 2 --pool prefork"
    ]


@pytest.mark.parametrize("missing", ["SECRET_KEY", "DATABASE_URL"])
@pytest.mark.parametrize("role", ["migrate", "web", "worker", "beat", "mcp", "manage"])
def test_a_missing_setting_stops_every_role_with_one_line_before_anything_runs(tmp_path, role, missing):
    done, calls = _run_entrypoint(tmp_path, role, **{missing: ""})
    assert done.returncode == 78
    assert done.stderr.splitlines() == [
        f"reasoningbank: {missing} is not set; a production container needs SECRET_KEY and DATABASE_URL"
        " in its environment (docs/production.md)"
    ]
    assert calls == []


@pytest.mark.parametrize("service", [*APP_SERVICES, "migrate", "mcp"])
def test_every_app_service_runs_on_a_read_only_root_with_a_memory_tmp(compose, service):
    spec = compose["services"][service]
    assert spec["read_only"] is True
    assert spec["tmpfs"] == ["/tmp"]


def test_the_entrypoint_is_executable():
    assert os.access(DOCKER / "entrypoint.sh", os.X_OK)
