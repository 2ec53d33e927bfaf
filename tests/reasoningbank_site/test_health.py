"""/healthz (alive, no database) and /readyz (each dependency, 200 or 503) —
against the real database, a real private Redis (frozen with SIGSTOP) and
the real embedding model."""

import os
import signal
import subprocess
import sys

import pytest

from memories.embedding import model as embeddings
from tests.worker import redis_broker, wait_for  # noqa: F401


def test_healthz_answers_without_touching_the_database(client):
    # No django_db mark: any query here would fail the test.
    response = client.get("/healthz")
    assert (response.status_code, response.json()) == (200, {"status": "alive"})
    assert "no-cache" in response["Cache-Control"]


@pytest.mark.django_db(transaction=True)
def test_readyz_is_ready_once_the_model_is_loaded(client):
    embeddings.get_model()
    response = client.get("/readyz")
    body = response.json()
    assert response.status_code == 200, body
    assert body["status"] == "ready"
    assert {name: check["ok"] for name, check in body["checks"].items()} == {
        "database": True,
        "broker": True,
        "embedding_model": True,
        "migrations": True,
    }


@pytest.mark.django_db(transaction=True)
def test_readyz_is_not_ready_while_the_model_cannot_load(client, settings, tmp_path):
    settings.RB_EMBEDDING_MODEL = str(tmp_path / "no-such-model")
    # The first /readyz starts loading (this process did not preload); the error lands shortly after.
    wait_for(lambda: client.get("/readyz") and embeddings.model_load_error(), timeout=180, what="the load error")
    response = client.get("/readyz")
    assert response.status_code == 503
    check = response.json()["checks"]["embedding_model"]
    assert check["ok"] is False and "no-such-model" in check["detail"]
    assert response.json()["checks"]["database"]["ok"] is True


@pytest.mark.django_db(transaction=True)
def test_readyz_answers_503_within_its_deadline_when_the_broker_is_frozen(client, redis_broker):
    embeddings.get_model()
    assert client.get("/readyz").json()["checks"]["broker"]["ok"] is True
    os.kill(redis_broker.process.pid, signal.SIGSTOP)
    try:
        # Answered while Redis is still frozen: the check gave up on its deadline instead of waiting for it.
        response = client.get("/readyz")
    finally:
        os.kill(redis_broker.process.pid, signal.SIGCONT)
    assert response.status_code == 503, response.content
    body = response.json()
    assert body["checks"]["broker"]["ok"] is False
    # Either the probe's socket timeout or the check's own deadline ended the wait.
    detail = body["checks"]["broker"]["detail"].lower()
    assert "timeout" in detail or "no answer within" in detail, body
    assert body["checks"]["database"]["ok"] is True
    # Thawed, it is ready again without a restart.
    assert client.get("/readyz").status_code == 200


def _python(code: str, **extra_env: str) -> str:
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "reasoningbank_site.settings", **extra_env}
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout.strip()


def test_a_web_process_loads_the_model_at_start_and_commands_do_not():
    # The WSGI entry point (gunicorn loads it in each worker before the worker accepts a
    # request) returns with the model loaded and used once and the URLconf imported (the API's
    # modules with it): no request waits for either. The model runs
    # under ONNX Runtime, so torch stays out of the web process (its export runs in a subprocess)…
    started = _python(
        "import sys, reasoningbank_site.wsgi; from memories.embedding import model as embeddings\n"
        "print(embeddings.model_is_loaded(), embeddings.model_load_error() or 'no error', 'torch' in sys.modules,"
        " 'memories.serving.api' in sys.modules)"
    )
    assert started == "True no error False True"
    # …while Django set up for a management command (or the test suite) never imports torch.
    command = _python("import sys, django; django.setup(); import memories.tasks; print('torch' in sys.modules)")
    assert command == "False"


def test_a_web_process_starts_even_when_the_warm_up_search_cannot_reach_the_database():
    started = _python(
        "import reasoningbank_site.wsgi; from memories.embedding import model as embeddings; print(embeddings.model_is_loaded())",
        RB_DATABASE_NAME="rb_no_such_database",
    )
    assert started == "True"
