"""A retrieval's log is written before its answer leaves, so a trajectory sent
with its id right after is linked to it; an id that is not a logged retrieval
of the bank is refused after one lookup, without waiting."""

from __future__ import annotations

import json
import time
import uuid

import pytest
import time_machine
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from memories.serving.models import RetrievalEvent
from reasoningbank_site.ids import uuid7, uuid7_issued_at
from tests import factories
from tests.helpers import post_over_http
from trajectories.models import Trajectory

LESSON = ("Sign in before acting", "Use when the task needs an account.", "Log in first and confirm the session.")
QUERY = "log into my account and list my orders"
STEPS = [{"thought": "Sign in first", "action": "login()", "observation": "signed in"}]


def _lookups(queries) -> int:
    return sum(1 for q in queries if 'FROM "memories_retrievalevent"' in q["sql"])


# --- the ids ---------------------------------------------------------------------------


def test_retrieval_ids_are_uuid7_and_say_when_they_were_issued():
    before = time.time()
    ids = [uuid7() for _ in range(2000)]
    after = time.time()
    assert len(set(ids)) == len(ids)
    assert all(i.version == 7 and i.variant == uuid.RFC_4122 for i in ids)
    assert all(before - 0.001 <= uuid7_issued_at(i) <= after + 0.001 for i in ids)
    assert uuid7_issued_at(uuid.uuid4()) is None
    with time_machine.travel(max(uuid7_issued_at(i) for i in ids) + 0.0015, tick=False):  # the next millisecond
        assert uuid7() > max(ids), "a later id sorts later"


# --- over a live server: the answer, then at once a trajectory linked to it ---------------


@pytest.mark.django_db(transaction=True)
def test_a_trajectory_sent_right_after_its_answer_is_linked(live_server, approved):
    bank = factories.make_bank(top_k=1, min_similarity=-1.0, rate_limit_per_minute=0)
    approved(bank, *LESSON)
    token = factories.make_token(bank)

    status, answer = post_over_http(f"{live_server.url}/api/v1/retrieve", token, {"query": QUERY})
    assert status == 200 and [i["title"] for i in answer["items"]] == [LESSON[0]]
    event = RetrievalEvent.objects.get(public_id=answer["retrieval_id"])  # logged before the answer left
    assert event.query == QUERY and len(event.results) == 1

    trajectory = {"task": QUERY, "steps": STEPS, "final_answer": "3 orders", "retrieval_id": answer["retrieval_id"]}
    status, body = post_over_http(f"{live_server.url}/api/v1/trajectories", token, trajectory)
    assert status == 202, body
    row = Trajectory.objects.get(public_id=body["id"])
    assert row.retrieval_id == event.pk
    event.refresh_from_db()
    assert event.linked == 1


# --- ids that are not this bank's logged retrievals are refused at once ----------------------


@pytest.mark.parametrize(
    "make_id",
    [
        pytest.param(uuid.uuid4, id="not-time-ordered"),
        pytest.param(lambda: uuid.UUID(int=(uuid7().int & ~(((1 << 48) - 1) << 80)) | (1_000 << 80)), id="issued-1970"),
        pytest.param(uuid7, id="issued-now-never-logged"),
    ],
)
def test_an_unknown_retrieval_id_is_refused_after_one_lookup(bank, token, make_id):
    rid = make_id()
    with CaptureQueriesContext(connection) as queries:
        response = _client_post(token, {"task": "t", "steps": STEPS, "retrieval_id": str(rid)})
    assert response.status_code == 422
    assert response.json()["detail"].startswith(f"retrieval_id: {rid} is not a retrieval of this bank")
    assert _lookups(queries) == 1
    assert Trajectory.objects.count() == 0


def test_another_banks_fresh_retrieval_is_refused_without_waiting(bank, token, other_bank):
    theirs = RetrievalEvent.objects.create(bank=other_bank, query="q", mode="items", k=3)
    assert time.time() - uuid7_issued_at(theirs.public_id) < 1, "just logged"
    with CaptureQueriesContext(connection) as queries:
        response = _client_post(token, {"task": "t", "steps": STEPS, "retrieval_id": str(theirs.public_id)})
    assert response.status_code == 422
    assert _lookups(queries) == 1, "this bank's lookup: no waiting"
    assert Trajectory.objects.count() == 0


def _client_post(token: str, body: dict):
    return Client().post(
        "/api/v1/trajectories",
        data=json.dumps(body),
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {token}",
    )
