"""/readyz tells anyone ready or not (200/503), and names its checks, their
reasons and timings only to those who may read /metrics: the metrics token
when one is set, else a request from this machine."""

import pytest
from django.test import Client

from memories.embedding import model as embeddings
from tests.worker import wait_for

pytestmark = pytest.mark.django_db(transaction=True)

CHECKS = {"database", "broker", "embedding_model", "migrations"}


@pytest.fixture(autouse=True)
def model_loaded():
    embeddings.get_model()


def test_a_remote_caller_gets_the_status_without_the_checks(settings):
    settings.RB_METRICS_TOKEN = ""
    response = Client(REMOTE_ADDR="203.0.113.9").get("/readyz")
    assert (response.status_code, response.json()) == (200, {"status": "ready"})


def test_loopback_gets_every_check_when_no_metrics_token_is_set(settings):
    settings.RB_METRICS_TOKEN = ""
    for address in ("127.0.0.1", "::1"):
        body = Client(REMOTE_ADDR=address).get("/readyz").json()
        assert set(body["checks"]) == CHECKS, body
        assert all(check["ok"] and check["ms"] is not None for check in body["checks"].values()), body


def test_with_a_metrics_token_only_its_bearer_gets_the_checks(settings):
    settings.RB_METRICS_TOKEN = "s3cret-metrics"
    loopback = Client()
    assert loopback.get("/readyz").json() == {"status": "ready"}
    assert loopback.get("/readyz", HTTP_AUTHORIZATION="Bearer wrong").json() == {"status": "ready"}
    remote = Client(REMOTE_ADDR="203.0.113.9", HTTP_AUTHORIZATION="Bearer s3cret-metrics")
    assert set(remote.get("/readyz").json()["checks"]) == CHECKS


def test_not_ready_is_503_to_anyone_and_its_reason_only_to_loopback(settings, tmp_path):
    settings.RB_METRICS_TOKEN = ""
    settings.RB_EMBEDDING_MODEL = str(tmp_path / "no-such-model")
    remote = Client(REMOTE_ADDR="203.0.113.9")
    response = remote.get("/readyz")
    assert (response.status_code, response.json()) == (503, {"status": "not ready"})
    # Loading the missing model starts in the background on the first /readyz; its error lands shortly after.
    wait_for(embeddings.model_load_error, timeout=180, what="the load error")
    check = Client().get("/readyz").json()["checks"]["embedding_model"]
    assert check["ok"] is False and "no-such-model" in check["detail"]
    assert "no-such-model" not in remote.get("/readyz").content.decode()
