"""Hostile input to the API: answers a 4xx JSON error (or is
scrubbed), never a 500 or an HTML page."""

from __future__ import annotations

import json
import uuid
from datetime import datetime, timedelta, timezone
from urllib.parse import quote

import pytest
from django.urls import reverse
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memories.items.models import MemoryItem
from memories.serving.models import RetrievalEvent
from reasoningbank_site.values import moment_problem
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


# --- moments and release references that once answered 500 ------------------------------------

# Beyond PostgreSQL's ±15:59 offsets (both signs), and past year 9999 once converted to UTC.
UNSTORABLE_MOMENTS = [
    "2030-01-01T00:00:00+16:00",
    "2030-01-01T00:00:00-16:00",
    "9999-12-31T23:00:00-02:00",
    "9999-12-31T23:59:59.999999-00:01",
]


@pytest.fixture
def review_auth(bank):
    return {"HTTP_AUTHORIZATION": f"Bearer {factories.make_token(bank, scopes=('review',), name='review')}"}


@pytest.mark.parametrize("moment", UNSTORABLE_MOMENTS)
def test_a_valid_until_that_cannot_be_stored_is_422_naming_it(client, item, review_auth, moment):
    url = f"{API}/review/items/{item.public_id}"
    response = client.patch(
        url, data=json.dumps({"valid_until": moment}), content_type="application/json", **review_auth
    )
    assert response.status_code == 422, response.content
    answer = response.json()
    assert answer["code"] == "validation_error" and answer["detail"].startswith("valid_until: ")
    assert ("UTC offset" in answer["detail"]) == ("16:00" in moment)
    assert ("year 9999" in answer["detail"]) == moment.startswith("9999")
    item.refresh_from_db()
    assert item.valid_until is None


@pytest.fixture
def released(bank, owner, item):
    from memories.review.decisions import memory_item_approve

    memory_item_approve(item=item, author=owner, confirm_duplicate=True)  # release 1
    return item


@pytest.mark.parametrize(
    "method, path",
    [
        ("get", "/releases/²/diff"),
        ("get", "/releases/1/diff?against=²"),
        ("get", "/releases/١/diff"),  # an Arabic-Indic one: int() reads it, a release number it is not
        ("get", "/releases/1/diff?against=1_0"),
        ("get", "/releases/²/export"),
        ("post", "/releases/²/rollback"),
        ("post", "/releases/²/canary"),
    ],
)
def test_a_release_reference_that_is_neither_a_number_nor_an_id_is_422(client, released, review_auth, method, path):
    body = json.dumps({"fraction": 0.1}) if path.endswith("canary") else "{}"
    if method == "get":
        response = client.get(API + path, **review_auth)
    else:
        response = client.post(API + path, data=body, content_type="application/json", **review_auth)
    assert response.status_code == 422, response.content
    answer = response.json()
    assert answer["code"] == "validation_error"
    assert "release number (digits 0-9) or a release id" in answer["detail"]


# Offsets pydantic parses (up to ±23:59), around the ends of Python's and PostgreSQL's ranges.
_OFFSETS = st.timedeltas(min_value=-timedelta(hours=23, minutes=59), max_value=timedelta(hours=23, minutes=59)).map(
    lambda d: timezone(timedelta(minutes=int(d.total_seconds() // 60)))
)
_EDGE_MOMENTS = st.one_of(
    st.datetimes(min_value=datetime(9999, 12, 30), timezones=_OFFSETS),
    st.datetimes(min_value=datetime(2100, 1, 1), max_value=datetime(2100, 1, 2), timezones=_OFFSETS),
)


@given(moment=_EDGE_MOMENTS)
@settings(max_examples=40, deadline=None, derandomize=True, database=None, suppress_health_check=list(HealthCheck))
def test_any_parsed_valid_until_is_stored_or_422(client, item, review_auth, moment):
    url = f"{API}/review/items/{item.public_id}"
    body = json.dumps({"valid_until": moment.isoformat()})
    response = client.patch(url, data=body, content_type="application/json", **review_auth)
    storable = moment_problem(moment) is None
    assert response.status_code == (200 if storable else 422), (moment.isoformat(), response.content)
    if storable:
        item.refresh_from_db()
        assert item.valid_until == moment
    else:
        assert response.json()["detail"].startswith("valid_until: ")


@given(ref=st.text(min_size=1, max_size=12))
@settings(max_examples=60, deadline=None, derandomize=True, database=None, suppress_health_check=list(HealthCheck))
def test_any_release_reference_answers_json_never_500(client, released, review_auth, ref):
    for url in (f"{API}/releases/{quote(ref, safe='')}/diff", f"{API}/releases/1/diff?against={quote(ref, safe='')}"):
        response = client.get(url, **review_auth)
        assert response.status_code in (200, 404, 422), (ref, response.content)
        assert response["Content-Type"].startswith("application/json")
        if response.status_code == 200:
            assert ref.strip().isascii() and ref.strip().isdigit()  # only a number (release 1) is found


# --- every write route refuses a field it does not know -------------------------------------------

# Write routes whose body is not a JSON object of our own, and why they are left out.
NOT_OUR_JSON = {
    ("post", "/api/v1/otel/v1/traces"): "OTLP/JSON: the protocol tells receivers to ignore unknown fields",
    ("post", "/api/v1/releases/import"): "a JSON Lines file, not a JSON object",
    ("post", "/api/v1/task-sets/upload"): "a JSON Lines file, not a JSON object",
}
UNKNOWN = "unknown_field_never_declared"


def _write_routes() -> list[tuple[str, str]]:
    from reasoningbank_site.api import api

    paths = api.get_openapi_schema(path_prefix="/api/v1")["paths"]
    return sorted((method, path) for path, ops in paths.items() for method in ops if method in ("post", "put", "patch"))


def test_the_walk_finds_the_write_routes():
    routes = _write_routes()
    assert ("post", "/api/v1/releases/publish") in routes and ("put", "/api/v1/releases/settings") in routes
    assert set(NOT_OUR_JSON) <= set(routes), "no such route any more: update NOT_OUR_JSON"


@pytest.mark.parametrize("method, path", [r for r in _write_routes() if r not in NOT_OUR_JSON])
def test_every_write_route_answers_an_unknown_field_with_422_naming_it(client, bank, method, path):
    """Walks the OpenAPI document, so a route added later cannot forget ``extra="forbid"``:
    a body with a field the route does not know is refused, never silently ignored."""
    secret = factories.make_token(bank, scopes=("retrieve", "ingest", "review"), name="all")
    url = path.format(item_id=uuid.uuid4(), release_id="1", evaluation_id=uuid.uuid4(), try_id=uuid.uuid4())
    body = json.dumps({UNKNOWN: 1})
    response = getattr(client, method)(
        url, data=body, content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {secret}"
    )
    assert response.status_code == 422, (path, response.content)
    answer = response.json()
    assert answer["code"] == "validation_error" and f"{UNKNOWN}: Extra inputs are not permitted" in answer["detail"]
    assert any(e["type"] == "extra_forbidden" and e["loc"][-1] == UNKNOWN for e in answer["errors"])


@pytest.mark.parametrize(
    "method, path, body",
    [
        ("post", "/releases/publish", {"force": True}),
        ("post", "/releases/1/canary", {"fraction": 0.1, "extra": 1}),
        ("put", "/releases/settings", {"x": 1}),
        ("post", "/releases/1/rollback", {"force": True}),
    ],
)
def test_a_release_move_with_an_unknown_field_changes_nothing(client, released, review_auth, method, path, body):
    from memories.releases.models import BankReleasing

    before = list(BankReleasing.objects.filter(bank=released.bank).values())
    response = getattr(client, method)(
        API + path, data=json.dumps(body), content_type="application/json", **review_auth
    )
    assert response.status_code == 422, response.content
    assert [e["type"] for e in response.json()["errors"]] == ["extra_forbidden"]
    assert list(BankReleasing.objects.filter(bank=released.bank).values()) == before


@pytest.mark.parametrize("path", ["/releases/canary/promote", "/releases/canary/stop", "/releases/1/rollback"])
def test_a_move_without_fields_still_takes_no_body_or_an_empty_one(client, released, review_auth, path):
    bare = client.generic("POST", API + path, b"", **review_auth)  # curl -X POST: no body, no content type
    empty = client.post(API + path, data="{}", content_type="application/json", **review_auth)
    assert (bare.status_code, empty.status_code) == (200, 200), (bare.content, empty.content)
    assert bare.json()["noop"] and empty.json()["noop"]
