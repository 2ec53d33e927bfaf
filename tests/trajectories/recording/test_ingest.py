"""Recording one trajectory (trajectories.ingest.record): validation, a
repeated external_id, and concurrent duplicate POSTs."""

import threading

import pydantic
import pytest
from django.db import connection, transaction
from django.test import Client

from accounts.models import ApiToken
from memories.serving.models import RetrievalEvent
from reasoningbank_site.errors import Invalid
from tests import factories
from tests.trajectories.conftest import queued_tasks
from trajectories.ingest.record import trajectory_ingest
from trajectories.models import Trajectory

VALID = {"task": "Book a table for two", "steps": [{"thought": "open the site", "action": "goto('/')"}]}


def test_ingest_accepts_a_dict_and_raises_validation_errors(bank):
    trajectory, created = trajectory_ingest(bank=bank, token=None, data=dict(VALID))
    assert created and trajectory.step_count == 2 and trajectory.input_format == "steps"
    with pytest.raises(pydantic.ValidationError):
        trajectory_ingest(bank=bank, token=None, data={"task": "x"})
    with pytest.raises(Invalid) as info:
        trajectory_ingest(bank=bank, token=None, data={"task": "x", "steps": [{"nonsense": 1}]})
    assert info.value.code == "validation_error" and "steps[0]" in info.value.message


def test_a_repeat_with_a_linked_retrieval_answers_the_first_row_and_counts_once(db):
    """A repeated external_id with a linked retrieval and a trusted outcome is
    answered with the row first stored: its steps, its one agent judgment, and
    the retrieval's counters counted once."""
    bank = factories.make_bank(trust_agent_outcome=True)
    retrieval = RetrievalEvent.objects.create(bank=bank, query="q", mode="items", k=3, results=[{"id": 1, "rank": 1}])
    data = {**VALID, "external_id": "run-1", "retrieval_id": str(retrieval.public_id), "outcome": "success"}
    stored, created = trajectory_ingest(bank=bank, token=None, data=data)
    again, created_again = trajectory_ingest(bank=bank, token=None, data=data)
    assert created and not created_again and again.pk == stored.pk
    first = Trajectory.objects.filter(bank=bank, external_id="run-1").first()
    assert vars(again) | {"_state": None} == vars(first) | {"_state": None} and again.steps == stored.steps
    retrieval.refresh_from_db()
    assert (retrieval.linked, retrieval.judged, retrieval.successes, retrieval.results) == (
        1,
        1,
        1,
        [{"id": 1, "rank": 1}],
    )
    assert list(stored.judgments.values_list("source", "label")) == [("agent", "success")]


def test_a_repeat_inside_a_callers_transaction_leaves_it_usable(bank):
    """A repeated external_id met inside the caller's transaction (an OTLP trace
    closing, a batch's fallback) answers the first row, and the caller's
    transaction goes on."""
    stored, _created = trajectory_ingest(bank=bank, token=None, data={**VALID, "external_id": "run-2"})
    with transaction.atomic():
        again, created = trajectory_ingest(bank=bank, token=None, data={**VALID, "external_id": "run-2"})
        assert (again.pk, created) == (stored.pk, False)
        assert Trajectory.objects.filter(bank=bank).count() == 1


@pytest.mark.django_db(transaction=True)
def test_concurrent_duplicate_posts_make_one_row(bank, broker_queue):
    before = broker_queue.snapshot()
    secret = factories.make_token(bank)
    threads_n = 8
    barrier = threading.Barrier(threads_n)
    answers: list = [None] * threads_n
    payload = {**VALID, "external_id": "same-run"}

    def send(i):
        try:
            barrier.wait(timeout=30)
            answers[i] = Client().post(
                "/api/v1/trajectories",
                data=payload,
                content_type="application/json",
                HTTP_AUTHORIZATION=f"Bearer {secret}",
            )
        finally:
            connection.close()

    threads = [threading.Thread(target=send, args=(i,)) for i in range(threads_n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)

    statuses = sorted(r.status_code for r in answers)
    assert statuses == [200] * (threads_n - 1) + [202], [r.content for r in answers]
    ids = {r.json()["id"] for r in answers}
    assert len(ids) == 1
    rows = Trajectory.objects.filter(bank=bank, external_id="same-run")
    assert rows.count() == 1
    assert str(rows.get().public_id) in ids
    assert rows.get().token == ApiToken.objects.get(bank=bank)
    # enqueued once, after the one commit that created it
    assert queued_tasks(broker_queue, before) == [("trajectories.process", f"({rows.get().pk},)")]
