"""Issue 14: a retrieval's log is written after its answer, and nothing is lost for it.

The answer goes out first (reasoningbank_site.after_response); the log follows
on the request's thread. Its id is time-ordered (UUID v7), so a trajectory
that arrives with it before the log has landed waits for it
(retrieval_logs_awaited) instead of being refused, while an id that cannot be
landing is answered at once."""

from __future__ import annotations

import json
import logging
import signal
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from django.core.signals import request_finished, request_started
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from memories.models import RetrievalEvent
from memories.services import retrieval as retrieval_service
from reasoningbank_site import logs
from reasoningbank_site.after_response import after_response
from reasoningbank_site.ids import uuid7, uuid7_issued_at
from tests import factories
from tests.helpers import gunicorn_serving, post_over_http
from trajectories.models import Trajectory
from trajectories.recording.batch import trajectory_ingest_batch

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
    time.sleep(0.002)
    assert uuid7() > max(ids), "a later id sorts later"


# --- the mechanism, with Django's own request signals -----------------------------------


def test_after_response_runs_when_the_response_is_closed_and_a_failure_is_only_logged(caplog):
    ran = []

    def broken():
        raise RuntimeError("the database went away")

    request_started.send(sender=None, environ={})
    token = logs.request_id.set("req-after-1")
    try:
        after_response(broken)
        after_response(ran.append, "logged")
        assert ran == [], "nothing runs while the response is being built"
    finally:
        logs.request_id.reset(token)
    with caplog.at_level(logging.ERROR, logger="reasoningbank_site.after_response"):
        request_finished.send(sender=None)
    assert ran == ["logged"], "the next one still runs after a failure"
    [record] = [r for r in caplog.records if r.name == "reasoningbank_site.after_response"]
    assert "broken failed" in record.getMessage() and "the database went away" in record.exc_text
    after_response(ran.append, "at once")  # outside a request: at once
    assert ran == ["logged", "at once"]


# --- over a live server: the answer first, then the log; a trajectory that comes first waits ---


@pytest.mark.django_db(transaction=True)
def test_the_answer_does_not_wait_for_its_log_and_a_trajectory_that_comes_first_is_linked(
    live_server, approved, monkeypatch
):
    bank = factories.make_bank(top_k=1, min_similarity=-1.0, rate_limit_per_minute=0)
    approved(bank, *LESSON)
    token = factories.make_token(bank)
    writing, release, ingest_waiting = threading.Event(), threading.Event(), threading.Event()
    real_log, real_deadline = retrieval_service._retrieval_log, retrieval_service._log_deadline

    def held_log(event):  # the log is held until the test lets it go
        writing.set()
        assert release.wait(30)
        real_log(event)

    def watched_deadline(public_id, now):
        ingest_waiting.set()
        return real_deadline(public_id, now)

    monkeypatch.setattr(retrieval_service, "_retrieval_log", held_log)
    monkeypatch.setattr(retrieval_service, "_log_deadline", watched_deadline)
    monkeypatch.setattr(retrieval_service, "RETRIEVAL_LOG_GRACE_S", 60.0)  # a slow machine's steps stay inside it

    status, answer = post_over_http(f"{live_server.url}/api/v1/retrieve", token, {"query": QUERY})
    assert status == 200 and [i["title"] for i in answer["items"]] == [LESSON[0]]
    assert writing.wait(10), "the server writes the log after answering"
    assert not RetrievalEvent.objects.filter(public_id=answer["retrieval_id"]).exists()

    trajectory = {"task": QUERY, "steps": STEPS, "final_answer": "3 orders", "retrieval_id": answer["retrieval_id"]}
    with ThreadPoolExecutor(1) as pool:
        sent = pool.submit(post_over_http, f"{live_server.url}/api/v1/trajectories", token, trajectory)
        assert ingest_waiting.wait(10), "the trajectory's ingest looks for the retrieval, misses it, and waits"
        assert not sent.done()
        release.set()
        status, body = sent.result(timeout=30)

    assert status == 202, body
    event = RetrievalEvent.objects.get(public_id=answer["retrieval_id"])
    assert event.query == QUERY and len(event.results) == 1
    row = Trajectory.objects.get(public_id=body["id"])
    assert row.retrieval_id == event.pk
    event.refresh_from_db()
    assert event.linked == 1


# --- a real gunicorn stopped right after an answer still writes its log ---------------------


def test_a_graceful_stop_right_after_an_answer_still_writes_its_log(transactional_db, approved):
    bank = factories.make_bank(top_k=1, min_similarity=-1.0, rate_limit_per_minute=0)
    approved(bank, *LESSON)
    token = factories.make_token(bank)
    config = Path(__file__).with_name("gunicorn_held_log.py")  # holds each log 1.5 s after its answer
    server, base = gunicorn_serving("-c", str(config), "-w", "1", "--threads", "4", "--graceful-timeout", "30")
    try:
        status, answer = post_over_http(f"{base}/api/v1/retrieve", token, {"query": QUERY})
        assert status == 200 and [i["title"] for i in answer["items"]] == [LESSON[0]]
        assert not RetrievalEvent.objects.filter(public_id=answer["retrieval_id"]).exists(), "answered before logged"
        server.send_signal(signal.SIGTERM)  # what a deploy or `docker stop` sends
        assert server.wait(timeout=60) == 0
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()
    event = RetrievalEvent.objects.get(public_id=answer["retrieval_id"])
    assert event.query == QUERY and [r["score"] > 0 for r in event.results] == [True]


# --- ids that cannot be landing are answered at once ---------------------------------------


@pytest.mark.parametrize(
    "make_id",
    [
        pytest.param(uuid.uuid4, id="not-time-ordered"),
        pytest.param(lambda: uuid.UUID(int=(uuid7().int & ~(((1 << 48) - 1) << 80)) | (1_000 << 80)), id="issued-1970"),
    ],
)
def test_an_unknown_retrieval_id_that_cannot_be_landing_is_refused_after_one_lookup(bank, token, make_id):
    rid = make_id()
    with CaptureQueriesContext(connection) as queries:
        response = _client_post(token, {"task": "t", "steps": STEPS, "retrieval_id": str(rid)})
    assert response.status_code == 422
    assert response.json()["detail"].startswith(f"retrieval_id: {rid} is not a retrieval of this bank")
    assert _lookups(queries) == 1
    assert Trajectory.objects.count() == 0


def test_another_banks_fresh_retrieval_is_refused_without_waiting(bank, token, other_bank):
    theirs = RetrievalEvent.objects.create(bank=other_bank, query="q", mode="items", k=3)
    assert time.time() - uuid7_issued_at(theirs.public_id) < 1, "fresh: within the grace period"
    with CaptureQueriesContext(connection) as queries:
        response = _client_post(token, {"task": "t", "steps": STEPS, "retrieval_id": str(theirs.public_id)})
    assert response.status_code == 422
    assert _lookups(queries) == 2, "this bank's lookup, then one that finds it logged elsewhere: no waiting"
    assert Trajectory.objects.count() == 0


def test_a_fresh_id_never_logged_is_refused_once_the_grace_period_is_over(bank, token, monkeypatch):
    monkeypatch.setattr(retrieval_service, "RETRIEVAL_LOG_GRACE_S", 0.3)
    rid = uuid7()
    with CaptureQueriesContext(connection) as queries:
        response = _client_post(token, {"task": "t", "steps": STEPS, "retrieval_id": str(rid)})
    assert response.status_code == 422
    assert response.json()["detail"].startswith(f"retrieval_id: {rid} is not a retrieval of this bank")
    assert _lookups(queries) >= 4, "looked again while it could still land"
    assert time.time() - uuid7_issued_at(rid) >= 0.3
    assert Trajectory.objects.count() == 0


def _client_post(token: str, body: dict):
    return Client().post(
        "/api/v1/trajectories",
        data=json.dumps(body),
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {token}",
    )


# --- a batch: one log landed, one landing while the batch waits (another connection) --------


@pytest.mark.django_db(transaction=True)
def test_a_batch_links_a_retrieval_whose_log_lands_while_it_waits():
    bank = factories.make_bank()
    landed = RetrievalEvent.objects.create(bank=bank, query="first", mode="items", k=3)
    landing = RetrievalEvent(bank=bank, query="second", mode="items", k=3)  # answered, not yet logged

    def log_later():
        time.sleep(0.2)
        try:
            landing.save()
        finally:
            connection.close()

    writer = threading.Thread(target=log_later)
    writer.start()
    try:
        results = trajectory_ingest_batch(
            bank=bank,
            token=None,
            items=[
                {"task": "a", "steps": STEPS, "retrieval_id": str(landed.public_id)},
                {"task": "b", "steps": STEPS, "retrieval_id": str(landing.public_id)},
            ],
        )
    finally:
        writer.join()
    assert [r.created for r in results] == [True, True], [getattr(r, "error", None) for r in results]
    linked = dict(Trajectory.objects.filter(bank=bank).values_list("task", "retrieval__public_id"))
    assert linked == {"a": landed.public_id, "b": landing.public_id}
    assert sorted(RetrievalEvent.objects.filter(bank=bank).values_list("linked", flat=True)) == [1, 1]
