"""Hostile input to the API: answers a 4xx JSON error (or is
scrubbed), never a 500 or an HTML page."""

from __future__ import annotations

import json

import pytest
from django.urls import reverse

from memories.models import MemoryItem, RetrievalEvent
from tests import factories
from trajectories.models import Trajectory

API = "/api/v1"


def post_json(client, path, body, auth):
    return client.post(API + path, data=json.dumps(body), content_type="application/json", **auth)


@pytest.mark.parametrize("field", ["query", "task_id"])
@pytest.mark.parametrize("dirty", ["a\u0000b", "a\ud800b"])
def test_retrieve_scrubs_nul_and_lone_surrogates(client, auth, field, dirty):
    body = {"query": "find the login form", field: dirty}
    # json.dumps escapes both as \u0000 / \ud800, which JSON allows.
    response = post_json(client, "/retrieve", body, auth)
    assert response.status_code == 200, response.content
    event = RetrievalEvent.objects.get()
    stored = event.query if field == "query" else event.task_id
    assert "\x00" not in stored and stored.startswith("a") and stored.endswith("b")
    stored.encode("utf-8")  # no lone surrogate left


STEPS = [{"thought": "x"}]


@pytest.mark.parametrize(
    "method, path, body",
    [
        ("patch", "/review/items/{item}", {"title": "Renamed", "priority": 1}),
        ("post", "/review/items/{item}/approve", {"confirm_duplicate": True, "force": True}),
        ("post", "/review/items/{item}/reject", {"reason": "Too narrow.", "valid_until": "2030-01-01"}),
        ("post", "/retrieve", {"query": "find the login form", "top_k": 3}),
        ("post", "/trajectories", {"task": "t", "steps": STEPS, "valid_until": "2030-01-01"}),
        ("post", "/trajectories/batch", {"trajectories": [{"task": "t", "steps": STEPS}], "valid_until": "2030"}),
    ],
)
def test_unknown_body_fields_are_422_naming_the_field(client, bank, item, method, path, body):
    """A field the endpoint does not know is refused, not ignored (a PATCH with a field answering 200
    and changing nothing would mislead the caller). The error has the API's usual 422 shape."""
    secret = factories.make_token(bank, scopes=("retrieve", "ingest", "review"), name="all")
    before = (MemoryItem.objects.get(pk=item.pk).title, MemoryItem.objects.get(pk=item.pk).status)
    url = API + path.format(item=item.public_id)
    response = getattr(client, method)(
        url, data=json.dumps(body), content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {secret}"
    )
    assert response.status_code == 422, response.content
    answer = response.json()
    unknown = next(
        key
        for key in body
        if key not in ("title", "confirm_duplicate", "reason", "query", "task", "steps", "trajectories")
    )
    assert answer["code"] == "validation_error"
    assert answer["detail"] == f"{unknown}: Extra inputs are not permitted"
    assert [e["type"] for e in answer["errors"]] == ["extra_forbidden"]
    assert answer["errors"][0]["loc"][-1] == unknown
    item.refresh_from_db()
    assert (item.title, item.status) == before
    assert not RetrievalEvent.objects.exists() and not Trajectory.objects.filter(task="t").exists()


@pytest.mark.parametrize("value", ["9223372036854775808", str(10**30), "-1", "abc"])
@pytest.mark.parametrize("param", ["offset", "limit"])
def test_huge_or_bad_page_params_are_422(client, auth, param, value):
    response = client.get(f"{API}/memories?{param}={value}", **auth)
    assert response.status_code == 422, response.content
    assert response["Content-Type"].startswith("application/json")


def test_huge_impact_days_is_422(client, auth):
    response = client.get(f"{API}/impact?days={10**30}", **auth)
    assert response.status_code == 422


@pytest.mark.parametrize("path", ["/nope", "/memories/x/y/z", "/trajectories/abc/def"])
def test_unknown_api_paths_answer_json_404(client, auth, path):
    response = client.get(API + path, **auth)
    assert response.status_code == 404
    assert response["Content-Type"].startswith("application/json")
    assert response.json()["code"] == "not_found"


@pytest.mark.parametrize("method", ["put", "delete", "patch"])
@pytest.mark.parametrize("path", ["/retrieve", "/memories", "/trajectories"])
def test_wrong_method_answers_json_405_with_allow(client, auth, method, path):
    response = getattr(client, method)(API + path, data="{}", content_type="application/json", **auth)
    assert response.status_code == 405
    assert response["Content-Type"].startswith("application/json")
    assert response.json()["code"] == "method_not_allowed"
    assert response["Allow"]


def test_rate_limit_message_says_per_token(client, bank, token, auth):
    bank.rate_limit_per_minute = 1
    bank.save(update_fields=["rate_limit_per_minute"])
    assert client.get(API + "/token", **auth).status_code == 200
    response = client.get(API + "/token", **auth)
    assert response.status_code == 429
    detail = response.json()["detail"]
    assert "per token" in detail and "for this bank" not in detail


def test_api_url_name_still_reverses():
    assert reverse("api-v1:trajectory_detail", kwargs={"trajectory_id": "x"}).startswith("/api/v1/")
