"""/metrics: Prometheus text with request latency by route, trajectories by
state and the embedding backlog; readable with the token, or from loopback
when no token is set, a 404 to anyone else."""

import json
import re

import pytest
from django.test import Client

from memories.items.services import memory_item_create, memory_item_edit
from tests import factories

pytestmark = pytest.mark.django_db


def _value(text: str, name: str, **labels) -> float:
    """The sample ``name`` with exactly ``labels`` (in any order) in Prometheus text."""
    for line in text.splitlines():
        match = re.fullmatch(r"([a-z_]+)(?:\{(.*)\})? (\S+)", line)
        if match and match.group(1) == name:
            found = dict(re.findall(r'(\w+)="([^"]*)"', match.group(2) or ""))
            if found == {key: str(value) for key, value in labels.items()}:
                return float(match.group(3))
    raise AssertionError(f"{name} {labels} not in metrics:\n{text[:3000]}")


def test_metrics_count_requests_by_route_and_read_the_pipeline(bank, owner):
    auth = {"HTTP_AUTHORIZATION": f"Bearer {factories.make_token(bank)}"}
    client = Client()
    before = client.get("/metrics").content.decode()
    retrieved_before = (
        _value(before, "rb_http_request_duration_seconds_count", route="api/v1/retrieve", method="POST", status="2xx")
        if 'route="api/v1/retrieve"' in before
        else 0
    )
    body = json.dumps({"task": "Find the opening hours", "steps": [{"thought": "look it up"}]})
    assert client.post("/api/v1/trajectories", data=body, content_type="application/json", **auth).status_code < 300
    for _ in range(2):
        response = client.post(
            "/api/v1/retrieve", data=json.dumps({"query": "opening hours"}), content_type="application/json", **auth
        )
        assert response.status_code == 200, response.content
    item = memory_item_create(bank=bank, author=owner, title="Unembedded", description="d", content="c")
    memory_item_edit(item=item, author=owner, content="c, edited")  # its new text waits for a worker

    response = client.get("/metrics")
    assert response.status_code == 200 and response["Content-Type"].startswith("text/plain")
    text = response.content.decode()
    retrieved = _value(
        text, "rb_http_request_duration_seconds_count", route="api/v1/retrieve", method="POST", status="2xx"
    )
    assert retrieved == retrieved_before + 2
    assert _value(text, "rb_trajectories", state="received") == 1
    assert _value(text, "rb_trajectories", state="done") == 0
    assert _value(text, "rb_embedding_backlog") == 1  # the proposed item waits for a worker
    assert _value(text, "rb_oldest_received_age_seconds") >= 0
    # routes are patterns, never raw paths: no label carries an id
    assert not re.search(r'route="[^"]*[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-', text)


def test_metrics_need_the_token_when_one_is_set(settings):
    client = Client()
    settings.RB_METRICS_TOKEN = "s3cret-metrics"
    assert client.get("/metrics").status_code == 404
    assert client.get("/metrics", HTTP_AUTHORIZATION="Bearer wrong").status_code == 404
    assert client.get("/metrics", HTTP_AUTHORIZATION="Bearer s3cret-metrics").status_code == 200
    settings.RB_METRICS_TOKEN = ""
    assert client.get("/metrics", REMOTE_ADDR="203.0.113.9").status_code == 404
    assert client.get("/metrics").status_code == 200  # the test client is 127.0.0.1
