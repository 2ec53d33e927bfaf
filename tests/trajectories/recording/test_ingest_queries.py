"""Ingest's cost in queries, and that the batch path (one insert for the whole
batch) stores exactly what the one-by-one path stores."""

import json
import threading

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from memories.serving.models import RetrievalEvent, RetrievalTally
from tests import factories
from tests.trajectories.conftest import queued_tasks
from tests.trajectories.payloads import ANTHROPIC_MESSAGES, NATIVE_STEPS, OPENAI_MESSAGES
from trajectories.models import Judgment, Trajectory

URL = "/api/v1/trajectories"
BATCH_URL = "/api/v1/trajectories/batch"
TRIGGERED = [{"id": 1, "rank": 1}]  # a retrieval that served an item: it reaches the Impact sums


def _post(body, secret, url=URL):
    return Client().post(
        url, data=json.dumps(body), content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {secret}"
    )


def _scene(**bank_settings):
    bank = factories.make_bank(trust_agent_outcome=True, rate_limit_per_minute=0, **bank_settings)
    retrievals = [
        RetrievalEvent.objects.create(bank=bank, query=f"q{n}", mode="items", k=3, results=TRIGGERED) for n in range(6)
    ]
    return bank, factories.make_token(bank), retrievals


def _items(n, retrievals, tag):
    """n realistic trajectories: three shapes, every other with an external_id,
    every third linking one of ``retrievals``, some with the agent's outcome."""
    shapes = [{"steps": NATIVE_STEPS}, {"messages": OPENAI_MESSAGES}, {"messages": ANTHROPIC_MESSAGES}]
    items = []
    for i in range(n):
        item = {"task": f"task {i}", "agent": "a", **shapes[i % 3]}
        if i % 2 == 0:
            item["external_id"] = f"{tag}-{i}"
        if i % 3 == 0:
            item["retrieval_id"] = str(retrievals[i % len(retrievals)].public_id)
        if i % 4 == 0:
            item["outcome"] = "success" if i % 8 == 0 else "failure"
        items.append(item)
    return items


def _rows(bank):
    fields = ("task", "verdict", "status", "step_count", "input_format", "final_answer", "external_id", "outcome")
    rows = Trajectory.objects.filter(bank=bank).order_by("task")
    return [
        (*(getattr(t, f) for f in fields), t.retrieval.query if t.retrieval else None, t.steps)
        for t in rows.select_related("retrieval")
    ]


def _outcomes(bank):
    counters = list(
        RetrievalEvent.objects.filter(bank=bank).order_by("query").values_list("linked", "judged", "successes", "steps")
    )
    tallies = RetrievalTally.objects.filter(bank=bank).values_list(
        "trajectories", "judged", "successes", "units", "steps"
    )
    sums = [round(sum(row[i] for row in tallies), 6) for i in range(5)]
    judgments = sorted(
        Judgment.objects.filter(trajectory__bank=bank).values_list("trajectory__task", "source", "label", "rationale")
    )
    return counters, sums, judgments


@pytest.mark.django_db(transaction=True)  # as in a web process: no transaction around the request
def test_single_ingest_query_count(broker_queue, django_capture_on_commit_callbacks):
    _bank, secret, retrievals = _scene()
    with django_capture_on_commit_callbacks(execute=True):  # its task is sent: the next ones are not added to it
        _post({"task": "warm", "steps": NATIVE_STEPS}, secret)  # the once-a-minute last_used write
    body = {
        "task": "t",
        "steps": NATIVE_STEPS,
        "external_id": "run-1",
        "retrieval_id": str(retrievals[0].public_id),
        "outcome": "success",
    }
    before = broker_queue.snapshot()
    with CaptureQueriesContext(connection) as captured, django_capture_on_commit_callbacks(execute=True):
        response = _post(body, secret)
    assert response.status_code == 202, response.content
    # token, usage upsert; BEGIN, retrieval lock, INSERT (a taken external_id rolls it back), raw record INSERT,
    # judgment INSERT, counters UPDATE, tallies INSERT; COMMIT
    assert len(captured) <= 10, "\n".join(q["sql"][:120] for q in captured.captured_queries)
    trajectory = Trajectory.objects.get(public_id=response.json()["id"])
    assert trajectory.verdict == "success" and trajectory.retrieval == retrievals[0]
    assert list(trajectory.judgments.values_list("source", "label")) == [("agent", "success")]
    retrievals[0].refresh_from_db()
    assert (retrievals[0].linked, retrievals[0].judged, retrievals[0].successes) == (1, 1, 1)
    assert retrievals[0].steps == trajectory.step_count
    assert queued_tasks(broker_queue, before) == [("trajectories.process", f"({trajectory.pk},)")]

    # With nothing but the trajectory to write: token, rate count; BEGIN, INSERT, raw record INSERT; COMMIT.
    for plain in (
        {"task": "plain", "steps": NATIVE_STEPS},
        {"task": "plain", "steps": NATIVE_STEPS, "external_id": "p"},
    ):
        with CaptureQueriesContext(connection) as captured, django_capture_on_commit_callbacks(execute=True):
            assert _post(plain, secret).status_code == 202
        assert len(captured) == 6, "\n".join(q["sql"][:120] for q in captured.captured_queries)
    with CaptureQueriesContext(connection) as captured:  # a repeat: token, rate count; BEGIN, INSERT (refused);
        assert _post(plain, secret).status_code == 200  # ROLLBACK; its row
    assert len(captured) == 6, "\n".join(q["sql"][:120] for q in captured.captured_queries)
    # the plain ones enqueued once each, after their commits
    stored = Trajectory.objects.filter(task="plain").order_by("pk").values_list("pk", flat=True)
    assert queued_tasks(broker_queue, before)[1:] == [("trajectories.process", f"({pk},)") for pk in stored]


def test_batch_query_count_does_not_grow_with_the_batch(db, broker_queue, django_capture_on_commit_callbacks):
    bank, secret, retrievals = _scene()
    _post({"task": "warm", "steps": NATIVE_STEPS}, secret)
    counts = {}
    for n in (6, 60):
        before = broker_queue.snapshot()
        with CaptureQueriesContext(connection) as captured, django_capture_on_commit_callbacks(execute=True):
            response = _post({"trajectories": _items(n, retrievals, f"n{n}")}, secret, BATCH_URL)
        assert response.status_code == 200 and response.json()["accepted"] == n, response.content
        counts[n] = len(captured)
        ids = [r["id"] for r in response.json()["results"]]
        pks = dict(Trajectory.objects.filter(public_id__in=ids).values_list("public_id", "pk"))
        # one message for the batch; a worker fans it out (test_dispatch)
        assert queued_tasks(broker_queue, before) == [("trajectories.process_many", f"({sorted(pks.values())},)")]
    assert counts[6] == counts[60], counts
    # token, usage; BEGIN, lock retrievals, external_ids, SAVEPOINT, INSERT, raw records INSERT, RELEASE, judgments INSERT,
    # counters UPDATE, tallies INSERT; COMMIT
    assert counts[60] <= 13, counts
    assert Trajectory.objects.filter(bank=bank).count() == 1 + 6 + 60


def test_batch_stores_what_single_posts_store(db, broker_queue):
    """The same trajectories, one bank by single POSTs and another by one batch:
    the same rows, verdicts, judgments, retrieval counters and Impact sums."""
    banks = []
    for mode in ("single", "batch"):
        bank, secret, retrievals = _scene()
        items = _items(24, retrievals, "r")
        items.append(dict(items[0], task="task 0 again"))  # a repeated external_id: the first one answers
        if mode == "single":
            answers = [_post(item, secret) for item in items]
            duplicates = [a.json()["duplicate"] for a in answers]
            assert [a.status_code for a in answers] == [202] * 24 + [200]
        else:
            results = _post({"trajectories": items}, secret, BATCH_URL).json()["results"]
            duplicates = [r["duplicate"] for r in results]
            assert all(r["ok"] for r in results)
            assert results[24]["id"] == results[0]["id"]
        assert duplicates == [False] * 24 + [True]
        banks.append(bank)
    assert _rows(banks[0]) == _rows(banks[1])
    assert _outcomes(banks[0]) == _outcomes(banks[1])
    counters, sums, judgments = _outcomes(banks[1])
    assert sum(c[0] for c in counters) == 8 and len(judgments) == 6  # linked every third, outcome every fourth
    assert sums[0] == 8 and sums[1] == 2  # trajectories; judged: linked with an outcome (items 0 and 12)


@pytest.mark.django_db(transaction=True)
def test_concurrent_batches_with_the_same_external_ids_store_each_once(bank, broker_queue):
    """Two batches racing on the same external_ids: one bulk insert loses on the
    unique constraint and falls back to one by one; nothing is stored twice or lost."""
    secret = factories.make_token(bank)
    items = [{"task": f"t{i}", "steps": NATIVE_STEPS, "external_id": f"race-{i}"} for i in range(20)]
    barrier = threading.Barrier(4)
    answers = [None] * 4

    def send(i):
        try:
            barrier.wait(timeout=30)
            answers[i] = _post({"trajectories": items if i % 2 else items[::-1]}, secret, BATCH_URL)
        finally:
            connection.close()

    threads = [threading.Thread(target=send, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert [a.status_code for a in answers] == [200] * 4, [a.content for a in answers]
    by_external_id = {}
    for answer in answers:
        for result in answer.json()["results"]:
            assert result["ok"], result
            by_external_id.setdefault(result["id"], []).append(result["duplicate"])
    assert len(by_external_id) == 20
    assert all(sorted(flags) == [False, True, True, True] for flags in by_external_id.values()), by_external_id
    assert Trajectory.objects.filter(bank=bank).count() == 20
