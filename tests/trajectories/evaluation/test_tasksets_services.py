"""Task sets built from reviewed trajectories or uploaded as JSON Lines, and the leave-one-task-out rule."""

import json
from datetime import timedelta

import pytest
from django.utils import timezone

from memories.embedding.items import memory_item_embed_refresh
from memories.items.services import memory_item_create
from memories.review.decisions import memory_item_approve
from memories.serving.preview import retrieval_preview
from reasoningbank_site.errors import Conflict, Invalid, NotFound, TooLarge
from tests.factories import make_trajectory, propose_item, record_verdict
from trajectories.evaluation import tasksets
from trajectories.evaluation.models import EvalRun, EvalTask, TaskSet
from trajectories.evaluation.taskset_lines import REGEX_MAX, UPLOAD_MAX_BYTES, UPLOAD_MAX_TASKS
from trajectories.models import JudgmentSource, Trajectory

pytestmark = pytest.mark.django_db


def reviewed(bank, owner, task, label="success", **data):
    """A trajectory of ``bank`` whose outcome a human reviewed."""
    trajectory = make_trajectory(bank, task=task, status="done", **data)
    record_verdict(trajectory, label, source=JudgmentSource.HUMAN, author=owner)
    return trajectory


def judged(bank, task, label="success", **data):
    """A trajectory of ``bank`` judged by the LLM only."""
    trajectory = make_trajectory(bank, task=task, status="done", **data)
    record_verdict(trajectory, label)
    return trajectory


def jsonl(*records) -> bytes:
    return "\n".join(r if isinstance(r, str) else json.dumps(r) for r in records).encode()


# --- built from trajectories -----------------------------------------------------------------


def test_only_human_reviewed_outcomes_by_default_one_task_per_distinct_text(bank, owner):
    old = reviewed(bank, owner, "Book a table for two", task_id="book-1")
    newest = reviewed(bank, owner, "Book  a table for two ", task_id="book-1")  # the same task run again
    reviewed(bank, owner, "Cancel my order", "failure")
    judged(bank, "Track a parcel")  # an LLM verdict only
    make_trajectory(bank, task="No verdict yet")
    task_set = tasksets.task_set_from_trajectories(bank=bank, name="reviewed", filters={}, actor=owner)
    tasks = list(task_set.tasks.all())
    assert task_set.source == "trajectories" and task_set.task_count == 2 == len(tasks)
    by_text = {t.text: t for t in tasks}
    assert set(by_text) == {"Book  a table for two", "Cancel my order"}
    book = by_text["Book  a table for two"]
    assert book.key == "book-1" == book.task_id and book.trajectory_id == newest.pk != old.pk
    assert book.success_check is None
    cancel = by_text["Cancel my order"]
    assert cancel.key.startswith("t-") and cancel.task_id == ""
    assert task_set.filters["any_verdict"] is False and task_set.filters["limit"] == 50
    assert task_set.created_by == owner


def test_any_verdict_takes_judged_outcomes_too_but_never_an_evaluation_try(bank, owner):
    judged(bank, "Track a parcel")
    try_ = judged(bank, "An evaluation try")
    Trajectory.objects.filter(pk=try_.pk).update(learn=False)
    task_set = tasksets.task_set_from_trajectories(bank=bank, name="all", filters={"any_verdict": True})
    assert [t.text for t in task_set.tasks.all()] == ["Track a parcel"]


def test_filters_outcome_agent_text_dates_and_limit(bank, owner):
    reviewed(bank, owner, "Sign in and pay", agent="shop-agent")
    reviewed(bank, owner, "Sign in and read mail", "failure", agent="mail-agent")
    aged = reviewed(bank, owner, "Pay the old invoice", agent="shop-agent")
    Trajectory.objects.filter(pk=aged.pk).update(created_at=timezone.now() - timedelta(days=40))

    def texts(**filters):
        return sorted(
            c.text for c in tasksets.task_set_candidates(bank=bank, filters=tasksets.task_set_filters_clean(filters))
        )

    assert texts(outcome="failure") == ["Sign in and read mail"]
    assert texts(agent="shop-agent") == ["Pay the old invoice", "Sign in and pay"]
    assert texts(text="sign") == ["Sign in and pay", "Sign in and read mail"]
    since = (timezone.now() - timedelta(days=10)).date().isoformat()
    assert texts(date_from=since) == ["Sign in and pay", "Sign in and read mail"]
    assert texts(date_to=(timezone.now() - timedelta(days=30)).date().isoformat()) == ["Pay the old invoice"]
    assert len(texts(limit=1)) == 1


@pytest.mark.parametrize(
    "filters, message",
    [
        ({"outcome": "maybe"}, "filters.outcome"),
        ({"limit": 0}, "filters.limit"),
        ({"limit": 501}, "filters.limit"),
        ({"limit": "ten"}, "filters.limit"),
        ({"date_from": "yesterday"}, "filters.date_from"),
        ({"date_from": "2026-02-02", "date_to": "2026-01-01"}, "after"),
        ({"any_verdict": "yes"}, "filters.any_verdict"),
        ({"agentt": "x"}, "Unknown filter"),
    ],
)
def test_a_bad_filter_is_refused_and_nothing_saved(bank, owner, filters, message):
    reviewed(bank, owner, "Sign in and pay")
    with pytest.raises(Invalid, match=message):
        tasksets.task_set_from_trajectories(bank=bank, name="bad", filters=filters)
    assert not TaskSet.objects.exists() and not EvalTask.objects.exists()


def test_an_empty_selection_is_refused_with_a_clear_message_and_nothing_saved(bank, owner):
    judged(bank, "Track a parcel")  # judged, not reviewed
    with pytest.raises(Invalid, match="selects no task") as caught:
        tasksets.task_set_from_trajectories(bank=bank, name="empty", filters={})
    assert caught.value.code == "no_tasks"
    assert not TaskSet.objects.exists()


def test_a_taken_name_is_a_conflict(bank, other_bank, owner):
    reviewed(bank, owner, "Sign in and pay")
    tasksets.task_set_from_trajectories(bank=bank, name="smoke", filters={})
    with pytest.raises(Conflict) as caught:
        tasksets.task_set_from_trajectories(bank=bank, name="smoke", filters={})
    assert caught.value.code == "name_taken" and TaskSet.objects.count() == 1
    tasksets.task_set_upload(bank=other_bank, name="smoke", body=jsonl({"id": "a", "task": "t"}))  # another bank's


# --- uploaded --------------------------------------------------------------------------------


def test_upload_saves_each_task_with_its_check_metadata_and_task_id(bank, owner):
    body = jsonl(
        {"id": "q1", "task": "What is 2+2?", "check": {"type": "equals", "value": "4"}, "metadata": {"level": 1}},
        "",
        {"id": 7, "task": "Name a colour", "check": {"type": "regex", "value": "^(red|blue)$", "ignore_case": True}},
        {"id": "q3", "task": "Say hi", "task_id": "greeting"},
    )
    task_set = tasksets.task_set_upload(bank=bank, name="quiz", description="small", body=body, actor=owner)
    tasks = list(task_set.tasks.all())
    assert [t.key for t in tasks] == ["q1", "7", "q3"] and task_set.task_count == 3 and task_set.source == "upload"
    assert tasks[0].success_check == {"type": "equals", "value": "4", "ignore_case": False}
    assert tasks[0].metadata == {"level": 1} and tasks[0].task_id == "q1"  # its id is its task id by default
    assert tasks[1].success_check["ignore_case"] is True and tasks[1].success_check["type"] == "regex"
    assert tasks[2].task_id == "greeting" and tasks[2].success_check is None


BAD_LINES = [
    ('{"id": "a", "task": "x"}\n{"id": "a", "task": "y"}', 2, "duplicate id"),
    ('{"id": "a"}', 1, '"task" is missing'),
    ('{"id": "a", "task": "   "}', 1, '"task" is missing'),
    ('{"task": "x"}', 1, '"id" is missing'),
    ('{"id": "a", "task": "x", "check": {"type": "startswith", "value": "x"}}', 1, "check.type"),
    ('{"id": "a", "task": "x", "check": {"type": "regex", "value": "(unclosed"}}', 1, "not a valid regular"),
    ('{"id": "a", "task": "x", "check": {"type": "regex", "value": "' + "a" * (REGEX_MAX + 1) + '"}}', 1, "at most"),
    ('{"id": "a", "task": "x", "check": {"type": "contains", "value": ""}}', 1, "check.value"),
    ('{"id": "a", "task": "x", "check": "contains 4"}', 1, '"check" must be an object'),
    ('{"id": "a", "task": "x", "check": {"type": "equals", "value": "4", "ignore_case": "yes"}}', 1, "ignore_case"),
    ('{"id": "a", "task": "x"', 1, "not JSON"),
    ('["a", "x"]', 1, "JSON object"),
    ('"just text"', 1, "JSON object"),
    ('{"id": "a", "task": "x", "metadata": [1]}', 1, '"metadata"'),
    ('{"id": "a", "task": "x\\u0000"}', 1, "NUL"),
    ('{"id": "a", "text": "x"}', 1, "unknown field"),
]


@pytest.mark.parametrize("body, line, message", BAD_LINES)
def test_a_bad_line_is_named_and_nothing_is_saved(bank, body, line, message):
    with pytest.raises(Invalid) as caught:
        tasksets.task_set_upload(bank=bank, name="bad", body=body.encode())
    errors = caught.value.details["errors"]
    assert [e["line"] for e in errors] == [line] and message in errors[0]["message"]
    assert message in caught.value.message
    assert not TaskSet.objects.exists() and not EvalTask.objects.exists()


def test_every_bad_line_is_listed(bank):
    body = jsonl({"id": "a", "task": "x"}, "nope", {"id": "a", "task": "y"}, {"id": "b"}, {"id": "c", "task": "z"})
    with pytest.raises(Invalid) as caught:
        tasksets.task_set_upload(bank=bank, name="bad", body=body)
    assert [e["line"] for e in caught.value.details["errors"]] == [2, 3, 4]
    assert not TaskSet.objects.exists()


def test_too_many_tasks_an_empty_file_and_a_too_large_body_are_refused(bank):
    many = jsonl(*({"id": str(i), "task": "t"} for i in range(UPLOAD_MAX_TASKS + 1)))
    with pytest.raises(Invalid, match="at most 2,000"):
        tasksets.task_set_upload(bank=bank, name="many", body=many)
    with pytest.raises(Invalid, match="holds no task"):
        tasksets.task_set_upload(bank=bank, name="empty", body=b"\n\n")
    with pytest.raises(Invalid, match="not UTF-8"):
        tasksets.task_set_upload(bank=bank, name="latin", body='{"id": "a", "task": "caf\xe9"}'.encode("latin-1"))
    with pytest.raises(TooLarge):
        tasksets.task_set_upload(bank=bank, name="big", body=b" " * (UPLOAD_MAX_BYTES + 1))
    assert not TaskSet.objects.exists() and not EvalTask.objects.exists()


# --- lookup and delete -----------------------------------------------------------------------


def test_lookup_by_id_or_name_within_the_bank_only(bank, other_bank):
    task_set = tasksets.task_set_upload(bank=bank, name="quiz", body=jsonl({"id": "a", "task": "t"}))
    assert tasksets.task_set_lookup(bank=bank, ref="quiz") == task_set
    assert tasksets.task_set_lookup(bank=bank, ref=str(task_set.public_id)) == task_set
    for bank_, ref in ((other_bank, "quiz"), (other_bank, str(task_set.public_id)), (bank, "nope"), (bank, "")):
        with pytest.raises(NotFound):
            tasksets.task_set_lookup(bank=bank_, ref=ref)


def test_a_task_set_a_run_uses_is_not_deleted(bank):
    used = tasksets.task_set_upload(bank=bank, name="used", body=jsonl({"id": "a", "task": "t"}))
    EvalRun.objects.create(bank=bank, task_set=used, k=1)
    with pytest.raises(Conflict) as caught:
        tasksets.task_set_delete(task_set=used)
    assert caught.value.code == "task_set_in_use" and TaskSet.objects.filter(pk=used.pk).exists()
    free = tasksets.task_set_upload(bank=bank, name="free", body=jsonl({"id": "a", "task": "t"}))
    tasksets.task_set_delete(task_set=free)
    assert not TaskSet.objects.filter(pk=free.pk).exists() and EvalTask.objects.filter(task_set=used).exists()


# --- leave one task out ----------------------------------------------------------------------


def _serve(item):
    memory_item_embed_refresh(item_id=item.pk)
    item.refresh_from_db()
    return memory_item_approve(item=item, author=None, confirm_duplicate=True)


@pytest.fixture
def open_bank(bank):
    bank.min_similarity = -1.0
    bank.save(update_fields=["min_similarity"])
    return bank


@pytest.mark.parametrize("task_id", ["", "parcel-7"])
def test_an_item_learnt_from_a_task_is_never_served_for_that_task(open_bank, owner, task_id):
    bank = open_bank
    text = "Track the parcel sent to Lisbon and report its delivery date"
    learnt_from = reviewed(bank, owner, text, task_id=task_id)
    own = _serve(
        propose_item(
            bank,
            learnt_from,
            title="Track parcels on the carrier page",
            description="Use when asked where a parcel is.",
            content="Open the carrier's tracking page and read the delivery date.",
        )
    )
    again = reviewed(bank, owner, text, task_id=task_id)  # the task run once more, later: the set takes this run
    other = _serve(
        memory_item_create(
            bank=bank, title="Check the date format", description="Use for dates.", content="Write dates as YYYY-MM-DD."
        )
    )
    task = tasksets.task_set_from_trajectories(bank=bank, name="parcels", filters={}).tasks.get()
    assert task.trajectory_id == again.pk and task.task_id == task_id

    def served(**kwargs):
        result = retrieval_preview(bank=bank, query=task.text, k=5, task_id=task.task_id, **kwargs)
        return {item.pk for item, _ in result.items}

    assert str(own.public_id) in tasksets.task_excluded_items(task)
    assert served(exclude=tasksets.task_excluded_items(task)) == {other.pk}
    if not task_id:  # no task id: only the rule's exclusions keep it out
        assert own.pk in served()


def test_an_uploaded_task_leaves_out_lessons_of_past_runs_of_its_text_or_task_id(open_bank, owner):
    bank = open_bank
    by_text = _serve(propose_item(bank, reviewed(bank, owner, "Renew my library card"), title="Renew at the desk"))
    by_id = _serve(propose_item(bank, reviewed(bank, owner, "Renew the card, please", task_id="lib-9"), title="Renew"))
    unrelated = _serve(propose_item(bank, reviewed(bank, owner, "Order a pizza"), title="Order online"))
    body = jsonl({"id": "r1", "task": "Renew my library card"}, {"id": "r2", "task": "Renew it", "task_id": "lib-9"})
    first, second = tasksets.task_set_upload(bank=bank, name="cards", body=body).tasks.all()
    assert str(by_text.public_id) in tasksets.task_excluded_items(first)
    assert str(by_id.public_id) in tasksets.task_excluded_items(second)
    assert str(unrelated.public_id) not in tasksets.task_excluded_items(first) | tasksets.task_excluded_items(second)
