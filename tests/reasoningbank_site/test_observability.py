"""Observability through real processes: a gunicorn web process and a Celery
worker started with LOG_FORMAT=json, sharing one PROMETHEUS_MULTIPROC_DIR.

- every response carries an X-Request-ID (the client's when it is safe, else a
  fresh one), and the web's log lines of that request are JSON with that id;
- a trajectory ingested with an id is judged and distilled by the worker
  under the same id: its log lines carry it, with the task and trajectory;
- the web's /metrics shows the worker's LLM calls (by model, purpose and
  outcome, with the tokens the endpoint reported);
- /metrics reads the broker's queue depth, and a frozen broker cannot hang it."""

from __future__ import annotations

import functools
import json
import logging
import os
import signal
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path

import httpx
import pytest
from django.conf import settings
from django.db import connection
from django.test import Client

from reasoningbank_site.logs import PlainFormatter, request_id
from reasoningbank_site.metrics import multiprocess_dir_prepare
from tests import factories
from tests.reasoningbank_site.test_metrics import _value
from tests.trajectories.llm_answers import ITEMS_MD, JUDGE_FAILURE
from tests.worker import celery_broker, celery_worker, fake_llm_worker_env, wait_for  # noqa: F401
from trajectories.models import Status, Trajectory

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def eager_celery():
    """Off here: tasks travel through the broker."""
    yield


@pytest.fixture
def metrics_dir(tmp_path) -> Path:
    folder = tmp_path / "prometheus"
    folder.mkdir()
    return folder


@pytest.fixture
def celery_worker_env(fake_llm, metrics_dir):
    return fake_llm_worker_env(
        fake_llm,
        RB_LLM_RETRY_BACKOFF="0.2",
        LOG_FORMAT="json",
        PROMETHEUS_MULTIPROC_DIR=str(metrics_dir),
    )


class WebProcess:
    def __init__(self, process: subprocess.Popen, url: str, log_path: Path):
        self.process, self.url, self.log_path = process, url, log_path

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")


def json_lines(text: str) -> list[dict]:
    """The log lines that are JSON objects (gunicorn's own start-up lines are not ours)."""
    found = []
    for line in text.splitlines():
        if line.startswith("{"):
            found.append(json.loads(line))
    return found


@pytest.fixture
def web_process(celery_broker, celery_worker_env, tmp_path) -> WebProcess:
    """gunicorn serving the app against the test database and the test broker, logging JSON."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    env = {
        key: value
        for key, value in os.environ.items()
        if key not in ("CELERY_BROKER_URL", "REDIS_URL", "RB_BROKER_DIR")
    }
    env.update(
        {
            "RB_DATABASE_NAME": connection.settings_dict["NAME"],
            "RB_DATA_DIR": str(settings.DATA_DIR),
            "DJANGO_SETTINGS_MODULE": "reasoningbank_site.settings",
            "PYTHONUNBUFFERED": "1",
            "RB_EMBEDDING_PRELOAD": "0",
            **celery_broker.env,
            **celery_worker_env,
        }
    )
    log_path = tmp_path / "web.log"
    argv = [sys.executable, "-m", "gunicorn", "reasoningbank_site.wsgi:application"]
    argv += ["--bind", f"127.0.0.1:{port}", "--workers", "1", "--timeout", "60"]
    with open(log_path, "w") as log_file:
        proc = subprocess.Popen(
            argv, cwd=settings.BASE_DIR, env=env, stdin=subprocess.DEVNULL, stdout=log_file, stderr=subprocess.STDOUT
        )
    web = WebProcess(proc, f"http://127.0.0.1:{port}", log_path)

    def answers() -> bool:
        if proc.poll() is not None:
            pytest.fail(f"gunicorn exited with code {proc.returncode}:\n{web.log()}")
        try:
            return httpx.get(f"{web.url}/healthz", timeout=10).status_code == 200
        except httpx.HTTPError:
            return False

    try:
        wait_for(answers, timeout=90, what="gunicorn to answer /healthz")
        yield web
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        print(f"----- web log (exit code {proc.returncode}) -----\n{web.log()}")


@pytest.mark.parametrize("celery_broker", ["embedded"], indirect=True)
def test_each_response_has_a_request_id_and_its_log_lines_are_json_with_it(web_process):
    sent = "client-chosen.id:42"
    get = functools.partial(httpx.get, timeout=60)
    chosen = get(f"{web_process.url}/api/v1/no-such-route", headers={"X-Request-ID": sent})
    generated = get(f"{web_process.url}/api/v1/no-such-route-either")
    unsafe = get(f"{web_process.url}/api/v1/no-such-route", headers={"X-Request-ID": "bad id <script>"})
    too_long = get(f"{web_process.url}/healthz", headers={"X-Request-ID": "a" * 65})

    assert chosen.status_code == 404 and chosen.headers["X-Request-ID"] == sent
    for response in (generated, unsafe, too_long):
        assert len(response.headers["X-Request-ID"]) == 32 and int(response.headers["X-Request-ID"], 16) >= 0
    assert (
        len({generated.headers["X-Request-ID"], unsafe.headers["X-Request-ID"], too_long.headers["X-Request-ID"]}) == 3
    )

    def logged() -> list[dict]:
        lines = json_lines(web_process.log())
        ids = {line.get("request_id") for line in lines}
        return lines if {sent, generated.headers["X-Request-ID"], unsafe.headers["X-Request-ID"]} <= ids else []

    lines = wait_for(logged, timeout=60, what="the web process to log the three 404s")
    by_id = {line.get("request_id"): line for line in lines}
    line = by_id[sent]
    assert line["level"] == "WARNING" and line["logger"] == "django.request"
    assert line["message"] == "Not Found: /api/v1/no-such-route"
    assert line["timestamp"].startswith(time.strftime("%Y-", time.gmtime()))
    assert by_id[generated.headers["X-Request-ID"]]["message"] == "Not Found: /api/v1/no-such-route-either"
    assert "bad id" not in web_process.log()  # an unsafe id is neither logged nor echoed


@pytest.mark.worker
@pytest.mark.parametrize("celery_broker", ["embedded"], indirect=True)
def test_a_trajectory_keeps_its_request_id_in_the_worker_and_its_llm_calls_show_in_the_web_metrics(
    fake_llm, web_process, celery_worker
):
    fake_llm.error(503, "overloaded")  # the first judge call fails transiently: the task retries
    fake_llm.responder = lambda messages: (
        JUDGE_FAILURE if "accomplished the task" in messages[-1]["content"] else ITEMS_MD
    )
    bank = factories.make_bank()
    request_id = f"ingest-{uuid.uuid4().hex[:12]}"
    response = httpx.post(
        f"{web_process.url}/api/v1/trajectories",
        timeout=60,
        json={"task": "Find the Sunday opening hours of the city library.", "steps": factories.STEPS},
        headers={"Authorization": f"Bearer {factories.make_token(bank)}", "X-Request-ID": request_id},
    )
    assert response.status_code == 202, response.text
    assert response.headers["X-Request-ID"] == request_id
    trajectory = Trajectory.objects.get(bank=bank)

    def finished() -> bool:
        trajectory.refresh_from_db()
        return trajectory.status in (Status.DONE, Status.NEEDS_ATTENTION)

    wait_for(finished, timeout=120, what="the worker to judge and distill the trajectory")
    assert trajectory.status == Status.DONE, trajectory.status_detail
    assert len(fake_llm.requests) == 3  # the 503, then the judge, then the distiller

    lines = [line for line in json_lines(celery_worker.log()) if line.get("request_id") == request_id]
    runs = [line for line in lines if line["logger"] == "reasoningbank_site.logs"]
    # the first run (retried after the 503) and the second (a new message, published by the worker), both of
    # this trajectory
    assert [line["task"] for line in runs] == ["trajectories.process", "trajectories.process"]
    assert {line["trajectory_id"] for line in runs} == {trajectory.pk}
    assert "RETRY" in runs[0]["message"] and "SUCCESS" in runs[1]["message"]
    llm_requests = [line for line in lines if "/chat/completions" in line["message"]]  # the HTTP client's lines
    assert len(llm_requests) == 3
    # no other line in the worker's log claims this trajectory under another request id
    others = [line for line in json_lines(celery_worker.log()) if line.get("trajectory_id") == trajectory.pk]
    assert {line.get("request_id") for line in others} == {request_id}

    text = httpx.get(f"{web_process.url}/metrics", timeout=60).text
    calls = {
        outcome: _value(text, "rb_llm_calls_total", model="fake-model", purpose="judge", outcome=outcome)
        for outcome in ("ok", "transient")
    }
    assert calls == {"ok": 1, "transient": 1}
    assert _value(text, "rb_llm_calls_total", model="fake-model", purpose="distill", outcome="ok") == 1
    for purpose in ("judge", "distill"):
        for kind in ("prompt", "completion"):
            assert _value(text, "rb_llm_tokens_total", model="fake-model", purpose=purpose, kind=kind) > 0
    assert _value(text, "rb_llm_call_duration_seconds_count", model="fake-model", purpose="judge") == 2
    # the web's own request metrics are in the same scrape
    assert (
        _value(text, "rb_http_request_duration_seconds_count", route="api/v1/trajectories", method="POST", status="2xx")
        == 1
    )


@pytest.mark.parametrize("celery_broker", ["embedded", "redis"], indirect=True)
def test_metrics_show_the_queue_depth_and_a_frozen_broker_does_not_hang_the_scrape(celery_broker):
    bank = factories.make_bank()
    auth = {"HTTP_AUTHORIZATION": f"Bearer {factories.make_token(bank)}"}
    client = Client()
    for n in range(3):  # no worker runs: the three tasks wait in the queue
        body = {"task": f"Task {n}", "steps": factories.STEPS}
        assert (
            client.post("/api/v1/trajectories", data=body, content_type="application/json", **auth).status_code == 202
        )

    text = client.get("/metrics").content.decode()
    assert _value(text, "rb_broker_up") == 1
    assert _value(text, "rb_queue_depth", queue="celery") == 3
    assert _value(text, "rb_oldest_waiting_age_seconds", state="received") >= 0
    assert _value(text, "rb_oldest_waiting_age_seconds", state="awaiting_llm") == 0

    if celery_broker.process is None:
        return
    celery_broker.process.send_signal(signal.SIGSTOP)  # Redis frozen: it accepts connections, never answers
    try:
        # Answered while Redis is still frozen: the broker probe gave up instead of waiting for it.
        response = client.get("/metrics")
    finally:
        celery_broker.process.send_signal(signal.SIGCONT)
    assert response.status_code == 200
    text = response.content.decode()
    assert _value(text, "rb_broker_up") == 0
    assert "rb_queue_depth{" not in text
    assert _value(text, "rb_trajectories", state="received") == 3  # the database part still answers


def test_plain_logs_stay_human_readable_with_the_context_appended(settings):
    formatter = PlainFormatter(fmt=settings.LOGGING["formatters"]["plain"]["fmt"])
    record = logging.LogRecord("trajectories.stages", logging.INFO, __file__, 1, "judged %s", (7,), None)
    assert formatter.format(record).endswith(" INFO trajectories.stages: judged 7")
    token = request_id.set("abc-123")
    try:
        try:
            raise ValueError("boom")
        except ValueError:
            failed = logging.LogRecord("x", logging.ERROR, __file__, 1, "failed", (), sys.exc_info())
        first, *rest = formatter.format(failed).splitlines()
    finally:
        request_id.reset(token)
    assert first.endswith(" ERROR x: failed [request_id=abc-123]")
    assert rest[0] == "Traceback (most recent call last):" and rest[-1] == "ValueError: boom"


def test_make_run_gives_its_processes_one_emptied_metrics_directory(tmp_path, monkeypatch):
    monkeypatch.delenv("PROMETHEUS_MULTIPROC_DIR", raising=False)
    folder = tmp_path / "metrics"
    folder.mkdir()
    (folder / "counter_host-12.db").write_bytes(b"stale")
    env = multiprocess_dir_prepare(tmp_path)
    assert env == {"PROMETHEUS_MULTIPROC_DIR": str(folder)} and list(folder.iterdir()) == []
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("keep")
    (mine / "histogram_host-3.db").write_bytes(b"stale")
    monkeypatch.setenv("PROMETHEUS_MULTIPROC_DIR", str(mine))
    assert multiprocess_dir_prepare(tmp_path) == {"PROMETHEUS_MULTIPROC_DIR": str(mine)}
    assert [path.name for path in mine.iterdir()] == ["notes.txt"]  # only prometheus-client's files go
