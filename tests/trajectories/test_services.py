import threading

import pydantic
import pytest
from django.db import connection, transaction
from django.test import Client

from accounts.models import ApiToken
from memories.models import RetrievalEvent
from memories.services import retrievals_lock_for_outcomes
from reasoningbank_site.db import instances_fetched
from reasoningbank_site.errors import Invalid
from tests import factories
from tests.trajectories.conftest import queued_tasks
from trajectories import services
from trajectories.models import Judgment, Trajectory
from trajectories.services import judgment_record, trajectory_ingest

VALID = {"task": "Book a table for two", "steps": [{"thought": "open the site", "action": "goto('/')"}]}


def test_ingest_accepts_a_dict_and_raises_validation_errors(bank):
    trajectory, created = trajectory_ingest(bank=bank, token=None, data=dict(VALID))
    assert created and trajectory.step_count == 2 and trajectory.input_format == "steps"
    with pytest.raises(pydantic.ValidationError):
        trajectory_ingest(bank=bank, token=None, data={"task": "x"})
    with pytest.raises(Invalid) as info:
        trajectory_ingest(bank=bank, token=None, data={"task": "x", "steps": [{"nonsense": 1}]})
    assert info.value.code == "validation_error" and "steps[0]" in info.value.message


def _trajectory(bank):
    return trajectory_ingest(bank=bank, token=None, data=dict(VALID))[0]


def test_effective_verdict_human_over_agent_over_llm(bank):
    trajectory = _trajectory(bank)
    judgment_record(trajectory=trajectory, source="llm", label="success", prompt_version="v1")
    assert trajectory.verdict == "success"
    judgment_record(trajectory=trajectory, source="agent", label="failure")
    assert trajectory.verdict == "failure"  # trusted agent signal beats the LLM
    judgment_record(trajectory=trajectory, source="llm", label="success", prompt_version="v2")
    assert trajectory.verdict == "failure"
    judgment_record(trajectory=trajectory, source="human", label="success")
    assert trajectory.verdict == "success"
    judgment_record(trajectory=trajectory, source="agent", label="failure")
    assert trajectory.verdict == "success"  # a human judgment is never outranked
    judgment_record(trajectory=trajectory, source="human", label="failure")
    trajectory.refresh_from_db()
    assert trajectory.verdict == "failure"  # the latest human one
    assert trajectory.judgments.count() == 6  # appended, never overwritten


def test_llm_judgment_is_recorded_once_per_prompt_version(bank):
    trajectory = _trajectory(bank)
    first = judgment_record(trajectory=trajectory, source="llm", label="failure", prompt_version="judge-v1")
    again = judgment_record(trajectory=trajectory, source="llm", label="success", prompt_version="judge-v1")
    assert again.pk == first.pk and again.label == "failure"
    assert Judgment.objects.filter(trajectory=trajectory).count() == 1
    trajectory.refresh_from_db()
    assert trajectory.verdict == "failure"


def test_a_trajectorys_judgments_are_read_by_the_statement_the_orm_writes(bank):
    """judgment_record reads the judgments by a statement compiled once (issue 14): the ORM's, with the
    instances the ORM reads; the judgment it then appends is stored as ``create`` stores it."""
    trajectory = _trajectory(bank)
    first = judgment_record(trajectory=trajectory, source="llm", label="failure", prompt_version="judge-v1")
    second = judgment_record(trajectory=trajectory, source="human", label="success", rationale="checked")
    orm = services._judgments_queryset(trajectory.pk)
    assert (services._judgments_sql(), (trajectory.pk,)) == orm.query.sql_with_params()
    fetched = instances_fetched(Judgment, services._judgments_sql(), (trajectory.pk,))
    assert [vars(j) | {"_state": None} for j in fetched] == [vars(j) | {"_state": None} for j in orm]
    assert [j.pk for j in fetched] == [first.pk, second.pk] and fetched[1].rationale == "checked"
    assert not first._state.adding and first.created_at == Judgment.objects.get(pk=first.pk).created_at


def test_ingest_reads_the_external_id_and_the_retrieval_by_the_statements_the_orm_writes(db):
    """trajectory_ingest finds a repeated external_id (as ``.first()``) and locks the linked retrieval (as
    retrievals_lock_for_outcomes) by statements compiled once (issue 14): the ORM's, with the instances the ORM
    reads."""
    bank = factories.make_bank(trust_agent_outcome=True)
    retrieval = RetrievalEvent.objects.create(bank=bank, query="q", mode="items", k=3, results=[{"id": 1, "rank": 1}])
    data = {**VALID, "external_id": "run-1", "retrieval_id": str(retrieval.public_id), "outcome": "success"}
    stored, created = trajectory_ingest(bank=bank, token=None, data=data)
    again, created_again = trajectory_ingest(bank=bank, token=None, data=data)
    assert created and not created_again and again.pk == stored.pk
    orm = services._by_external_id_queryset(bank.pk, "run-1")
    assert (services._by_external_id_sql(), (bank.pk, "run-1")) == orm.query.sql_with_params()
    first = Trajectory.objects.filter(bank=bank, external_id="run-1").first()
    assert vars(again) | {"_state": None} == vars(first) | {"_state": None} and again.steps == stored.steps
    orm = services._retrieval_lock_queryset(bank.pk, retrieval.public_id)
    assert (services._retrieval_lock_sql(), (bank.pk, retrieval.public_id)) == orm.query.sql_with_params()
    with transaction.atomic():
        locked = retrievals_lock_for_outcomes(RetrievalEvent.objects.filter(bank=bank, public_id=retrieval.public_id))
        fetched = instances_fetched(RetrievalEvent, services._retrieval_lock_sql(), (bank.pk, retrieval.public_id))
    assert [vars(r) | {"_state": None} for r in fetched] == [vars(r) | {"_state": None} for r in locked]
    assert (fetched[0].linked, fetched[0].judged, fetched[0].successes, fetched[0].results) == (
        1,
        1,
        1,
        [{"id": 1, "rank": 1}],
    )
    assert list(stored.judgments.values_list("source", "label")) == [("agent", "success")]


@pytest.mark.parametrize("source, label", [("robot", "success"), ("llm", "meh")])
def test_judgment_record_rejects_unknown_values(bank, source, label):
    with pytest.raises(ValueError):
        judgment_record(trajectory=_trajectory(bank), source=source, label=label)


@pytest.mark.django_db(transaction=True)
def test_concurrent_duplicate_posts_make_one_row(bank, broker_queue):
    before = set(broker_queue.glob("*.msg")) if broker_queue else set()
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
    if broker_queue is not None:  # enqueued once, after the one commit that created it
        assert queued_tasks(broker_queue, before) == [("trajectories.process", f"({rows.get().pk},)")]
