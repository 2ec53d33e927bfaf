import json
import uuid
from datetime import timedelta

import pytest
from django.utils import timezone
from ninja.responses import NinjaJSONEncoder

from accounts.models import ApiToken, TokenUsage
from accounts.teams.banks import bank_update_settings
from accounts.tokens.services import api_token_revoke
from memories.items.models import MemoryItem
from memories.items.services import memory_item_propose
from memories.review.decisions import memory_item_archive
from memories.serving.models import RetrievalEvent
from memories.serving.schemas import RetrieveOut
from tests import factories

RETRIEVE = "/api/v1/retrieve"
LIST = "/api/v1/memories"

LOGIN = (
    "Sign in through the login form first",
    "Use when the task needs an account.",
    "Submit the login form before looking for orders.",
)
DATES = (
    "Type dates into date pickers",
    "Use when a form has a calendar widget.",
    "Typing YYYY-MM-DD beats clicking through months.",
)


def post(client, path, body, **headers):
    data = body if isinstance(body, (str, bytes)) else json.dumps(body)
    return client.post(path, data=data, content_type="application/json", **headers)


@pytest.fixture
def items(bank, approved):
    return [approved(bank, *LOGIN), approved(bank, *DATES)]


@pytest.fixture
def ingest_only(bank):
    return {"HTTP_AUTHORIZATION": f"Bearer {factories.make_token(bank, scopes=['ingest'])}"}


@pytest.fixture
def other_auth(other_bank):
    return {"HTTP_AUTHORIZATION": f"Bearer {factories.make_token(other_bank)}"}


# --- retrieve --------------------------------------------------------------------------


def test_retrieve_as_owner(client, auth, bank, items):
    response = post(client, RETRIEVE, {"query": "log into the sign in page", "k": 2, "task_id": "t-1"}, **auth)
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["mode"] == "items"
    assert body["items"][0]["id"] == str(items[0].public_id)
    assert set(body["items"][0]) == {"id", "title", "description", "content", "score", "similarity", "utility", "n"}
    assert body["items"][0]["title"] == LOGIN[0]
    assert 0 < body["items"][0]["score"] <= 1
    assert f"## {LOGIN[0]}" in body["system_block"]
    assert body["warnings"] == []
    event = RetrievalEvent.objects.get(public_id=body["retrieval_id"])
    assert event.bank == bank and event.token.bank == bank and event.task_id == "t-1" and event.k == 2
    # The answer is built without validation: its bytes are what django-ninja's validation of it renders.
    validated = RetrieveOut.model_validate(body).model_dump()
    assert response.content == json.dumps(validated, cls=NinjaJSONEncoder).encode()


def test_retrieve_answers_alike_counts_each_request_and_refuses_a_revoked_token_at_once(client, auth, bank, items):
    """The token is checked (and the request counted) before the query is
    embedded: the same answer each time, every request counted, and a
    revocation refused at the very next request."""
    query = {"query": "  log into the sign in page  ", "k": 2}
    first, second = post(client, RETRIEVE, query, **auth), post(client, RETRIEVE, query, **auth)
    assert first.status_code == second.status_code == 200, second.content
    assert [(i["id"], i["score"]) for i in second.json()["items"]] == [
        (i["id"], i["score"]) for i in first.json()["items"]
    ]
    token = ApiToken.objects.get(bank=bank, revoked_at__isnull=True)
    assert TokenUsage.objects.get(token=token).count == 2
    assert RetrievalEvent.objects.filter(bank=bank).count() == 2
    api_token_revoke(token=token)
    assert post(client, RETRIEVE, query, **auth).status_code == 401


def test_retrieve_warns_about_pending_embeddings_and_empty_bank(client, auth, bank, items):
    MemoryItem.objects.filter(pk=items[0].pk).update(embedding=None, embedding_hash="")
    body = post(client, RETRIEVE, {"query": "sign in"}, **auth).json()
    assert any("1 approved item" in w for w in body["warnings"])
    MemoryItem.objects.filter(bank=bank).delete()
    body = post(client, RETRIEVE, {"query": "sign in"}, **auth).json()
    assert body["items"] == [] and body["system_block"] == ""
    assert any("no approved memories" in w for w in body["warnings"])


def test_retrieve_never_serves_another_banks_items(client, other_auth, items):
    body = post(client, RETRIEVE, {"query": "log into the sign in page"}, **other_auth).json()
    assert body["items"] == []


def test_retrieve_without_token_is_401(client, items):
    response = post(client, RETRIEVE, {"query": "sign in"})
    assert response.status_code == 401
    assert response.json()["code"] == "missing_token"


def test_retrieve_with_ingest_only_token_is_403(client, ingest_only, items):
    response = post(client, RETRIEVE, {"query": "sign in"}, **ingest_only)
    assert response.status_code == 403
    assert response.json()["code"] == "missing_scope"


def test_revoked_and_expired_tokens_are_401(client, bank, items):
    revoked_secret = factories.make_token(bank, name="revoked")
    api_token_revoke(token=ApiToken.objects.get(bank=bank, name="revoked"))
    expired_secret = factories.make_token(bank, name="expired", expires_at=timezone.now() + timedelta(minutes=1))
    ApiToken.objects.filter(bank=bank, name="expired").update(expires_at=timezone.now() - timedelta(seconds=1))
    for secret in (revoked_secret, expired_secret, "rb_not-a-real-token"):
        for response in (
            post(client, RETRIEVE, {"query": "sign in"}, HTTP_AUTHORIZATION=f"Bearer {secret}"),
            client.get(LIST, HTTP_AUTHORIZATION=f"Bearer {secret}"),
            client.get(f"{LIST}/{items[0].public_id}", HTTP_AUTHORIZATION=f"Bearer {secret}"),
        ):
            assert response.status_code == 401
            assert response.json()["code"] == "invalid_token"


@pytest.mark.parametrize(
    "body",
    [
        {"query": ""},
        {"query": "   "},
        {"query": "x" * 8001},
        {"query": "sign in", "k": 0},
        {"query": "sign in", "k": 1000},
        {"query": "sign in", "k": "many"},
        {"k": 3},
        {"query": ["not", "a", "string"]},
        {"query": "sign in", "task_id": "t" * 201},
        [1, 2, 3],
        "",
    ],
)
def test_retrieve_bad_input_is_422(client, auth, body):
    response = post(client, RETRIEVE, body, **auth)
    assert response.status_code == 422, response.content
    data = response.json()
    assert data["code"] == "validation_error" and data["detail"]


def test_retrieve_non_json_body_is_a_clear_json_error(client, auth):
    # The shared handler (reasoningbank_site/api.py) answers unparsable JSON with 400 invalid_json.
    response = post(client, RETRIEVE, "{not json", **auth)
    assert response.status_code == 400
    assert response.json()["code"] == "invalid_json"
    assert "not valid JSON" in response.json()["detail"]


def test_retrieve_rejects_wrong_method_without_500(client, auth):
    assert client.get(RETRIEVE, **auth).status_code == 405


# --- list ------------------------------------------------------------------------------


def test_list_is_approved_only_newest_first_and_paginated(client, auth, bank, owner, approved):
    first = approved(bank, *LOGIN)
    second = approved(bank, *DATES)
    memory_item_propose(bank=bank, origin="success", title="Proposed", description="d", content="c")
    archived = approved(bank, "Archived one", "d", "c")
    memory_item_archive(item=archived, author=owner)
    body = client.get(LIST, **auth).json()
    assert body["count"] == 2
    assert [i["id"] for i in body["items"]] == [str(second.public_id), str(first.public_id)]
    assert body["items"][0]["origin"] == "manual" and body["items"][0]["approved_at"]
    page = client.get(f"{LIST}?limit=1&offset=1", **auth).json()
    assert page["count"] == 2 and [i["id"] for i in page["items"]] == [str(first.public_id)]
    assert client.get(f"{LIST}?offset=5", **auth).json()["items"] == []


def test_list_query_count_is_bounded(client, auth, bank, approved, django_assert_max_num_queries):
    bank_update_settings(
        bank=bank, actor=None, duplicate_threshold=1.0
    )  # near-identical lessons, kept apart on purpose
    bank.refresh_from_db()
    for n in range(5):
        approved(bank, f"Lesson {n}", "d", "c")
    # Token auth (lookup, rate window, last-used touch) + one page query + one count.
    with django_assert_max_num_queries(5):
        assert len(client.get(LIST, **auth).json()["items"]) == 5


@pytest.mark.parametrize("query", ["limit=0", "limit=101", "offset=-1", "limit=abc"])
def test_list_bad_pagination_is_422(client, auth, query):
    response = client.get(f"{LIST}?{query}", **auth)
    assert response.status_code == 422
    assert response.json()["code"] == "validation_error"


def test_list_of_another_bank_is_empty(client, other_auth, items):
    assert client.get(LIST, **other_auth).json() == {"count": 0, "release": None, "items": []}


def test_list_auth_errors(client, ingest_only, items):
    assert client.get(LIST).status_code == 401
    assert client.get(LIST, **ingest_only).status_code == 403


# --- detail ----------------------------------------------------------------------------


def test_detail_as_owner(client, auth, items):
    response = client.get(f"{LIST}/{items[0].public_id}", **auth)
    assert response.status_code == 200
    assert response.json()["title"] == LOGIN[0]


def test_detail_of_another_bank_is_404(client, other_auth, items):
    response = client.get(f"{LIST}/{items[0].public_id}", **other_auth)
    assert response.status_code == 404
    assert response.json()["code"] == "not_found"


def test_detail_of_unapproved_or_unknown_item_is_404(client, auth, bank):
    proposed = memory_item_propose(bank=bank, origin="success", title="Proposed", description="d", content="c")
    assert client.get(f"{LIST}/{proposed.public_id}", **auth).status_code == 404
    assert client.get(f"{LIST}/{uuid.uuid4()}", **auth).status_code == 404
    response = client.get(f"{LIST}/not-a-uuid", **auth)
    assert response.status_code in (404, 422)
    assert response.json()["code"] in ("not_found", "validation_error")


def test_detail_auth_errors(client, ingest_only, items):
    url = f"{LIST}/{items[0].public_id}"
    assert client.get(url).status_code == 401
    assert client.get(url, **ingest_only).status_code == 403
