"""The one near-duplicate check every new item goes through (distilled, MaTTS,
written by hand, approved at once, imported): two identical lessons proposed
in one bank at the same moment never both reach the queue, whichever door
each came in by. Real threads on their own database connections, real
embeddings (MiniLM); the race waits on pg_locks, never on a timer."""

from __future__ import annotations

import threading
import time

import pytest
from django.db import connection, transaction

from memories.items.imports import memory_items_import
from memories.items.models import ItemOrigin, ItemStatus, MemoryItem, SupportKind
from memories.items.services import ProposedItem, memory_item_create, memory_items_propose
from memories.review.decisions import memory_item_reject
from tests import factories
from tests.trajectories.llm_answers import ITEMS_MD, JUDGE_SUCCESS

pytestmark = pytest.mark.django_db(transaction=True)

LESSON = dict(
    title="Prefer the official source",
    description="Use when a schedule question comes up.",
    content="Check the institution's own pages before answering.",
)
# The same lesson in other words: similarity about 0.91, below the default merge threshold (0.92)
# and above the near-duplicate suggestions' 0.85.
NEAR = dict(
    title="Prefer official sources",
    description="Use when a schedule question comes up.",
    content="Check the official website of the institution before you answer.",
)


def _distilled(bank, lesson=LESSON):
    (item,) = memory_items_propose(bank=bank, proposals=[ProposedItem(**lesson)], origin=ItemOrigin.SUCCESS)
    return item


def _hand_written(owner):
    return lambda bank: memory_item_create(bank=bank, author=owner, **LESSON)


def _approved_now(owner):
    return lambda bank: memory_item_create(bank=bank, author=owner, status=ItemStatus.APPROVED, **LESSON)


def _imported(owner):
    def run(bank):
        report = memory_items_import(bank=bank, author=owner, records=[{**LESSON, "title": LESSON["title"] + "."}])
        assert not report.errors and not report.created and report.seen_again == [1]
        return MemoryItem.objects.get(bank=bank, title=LESSON["title"])

    return run


def _backend_pid() -> int:
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        return cursor.fetchone()[0]


def _waits_on_a_lock(pid: int) -> bool:
    with connection.cursor() as cursor:
        cursor.execute("SELECT EXISTS (SELECT 1 FROM pg_locks WHERE pid = %s AND NOT granted)", [pid])
        return cursor.fetchone()[0]


def _race(bank, first, second):
    """``first(bank)`` proposes in a transaction on one thread's connection and
    commits only once ``second(bank)``, started on another thread's connection
    after ``first`` proposed, waits on a lock held by ``first`` (pg_locks) or
    has finished without waiting. Returns both results."""
    proposed, second_done = threading.Event(), threading.Event()
    pid: dict[str, int] = {}
    results, errors = {}, []

    def run_first():
        try:
            with transaction.atomic():
                results["first"] = first(bank)
                proposed.set()
                deadline = time.monotonic() + 60
                while not second_done.is_set() and not ("second" in pid and _waits_on_a_lock(pid["second"])):
                    assert time.monotonic() < deadline, "the second proposal neither waited nor finished"
                    second_done.wait(0.01)
        except BaseException as exc:  # reported by the main thread
            errors.append(exc)
            proposed.set()
        finally:
            connection.close()

    def run_second():
        try:
            pid["second"] = _backend_pid()
            proposed.wait(60)
            results["second"] = second(bank)
        except BaseException as exc:
            errors.append(exc)
        finally:
            second_done.set()
            connection.close()

    threads = [threading.Thread(target=run_first), threading.Thread(target=run_second)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    assert not errors, errors
    return results["first"], results["second"]


@pytest.mark.parametrize("door", ["distilled", "hand-written", "approved now", "imported"])
def test_two_identical_lessons_proposed_at_the_same_moment_reach_the_queue_once(bank, owner, door):
    second = {
        "distilled": _distilled,
        "hand-written": _hand_written(owner),
        "approved now": _approved_now(owner),
        "imported": _imported(owner),
    }[door]

    first, again = _race(bank, _distilled, second)

    queued = list(MemoryItem.objects.filter(bank=bank))
    assert [(i.pk, i.status) for i in queued] == [(first.pk, ItemStatus.PROPOSED)]
    assert again.pk == first.pk  # the second became "seen again" evidence on the first
    (support,) = queued[0].supports.all()
    assert support.kind == SupportKind.DISTILLED and support.similarity >= bank.duplicate_threshold
    assert queued[0].support_count == 1


def test_a_hand_written_lesson_the_bank_holds_is_seen_again_with_its_note(bank, owner):
    held = _distilled(bank)
    again = memory_item_create(bank=bank, author=owner, **{**LESSON, "content": LESSON["content"] + "!"})

    assert again.pk == held.pk and again.supported_by.kind == SupportKind.DISTILLED
    assert MemoryItem.objects.filter(bank=bank).count() == 1
    note = held.versions.order_by("number").last().note
    assert note.startswith("Written again by hand") and "similarity" in note


def test_approve_now_of_a_lesson_the_bank_holds_approves_nothing_new(client, bank, owner):
    held = _distilled(bank)
    client.force_login(owner)
    response = client.post(
        f"/banks/{bank.public_id}/items/new/", {**LESSON, "approve_now": "on", "tags": ""}, follow=True
    )
    assert response.status_code == 200
    assert MemoryItem.objects.filter(bank=bank).count() == 1
    held.refresh_from_db()
    assert held.status == ItemStatus.PROPOSED and held.support_count == 1
    html = response.content.decode()
    assert "Not saved as a new item" in html and "similarity 1.00" in html


def test_a_hand_written_lesson_the_bank_refused_is_recorded_as_a_repeat(bank, owner):
    refused = _distilled(bank)
    memory_item_reject(item=refused, author=owner, reason="Not true for our sources.")

    again = memory_item_create(bank=bank, author=owner, **LESSON)

    assert again.pk == refused.pk and again.supported_by.kind == SupportKind.REPEATED
    assert MemoryItem.objects.filter(bank=bank).count() == 1


def test_a_twin_below_the_threshold_is_queued_and_each_names_the_other(bank, owner):
    first = _distilled(bank)
    second = memory_item_create(bank=bank, author=owner, **NEAR)

    assert second.pk != first.pk and second.status == ItemStatus.PROPOSED
    first.refresh_from_db()
    second.refresh_from_db()
    (named,) = second.near_duplicates
    assert named["id"] == str(first.public_id) and 0.85 <= named["similarity"] < bank.duplicate_threshold
    (back,) = first.near_duplicates  # the earlier twin shows the later one too, before anyone decides
    assert back == {"id": str(second.public_id), "title": NEAR["title"], "similarity": named["similarity"]}


def test_a_pipeline_distillation_at_the_same_moment_records_the_held_lesson_as_seen_again(bank, fake_llm):
    held = dict(  # the first lesson of ITEMS_MD, proposed a moment before by another distillation
        title="Prefer the official source",
        description="Use when a factual question about an institution's schedule comes up.",
        content="Look the fact up on the institution's own pages before answering, and quote the day-specific entry.",
    )
    trajectory = factories.make_trajectory(bank)
    fake_llm.reply(JUDGE_SUCCESS).reply(ITEMS_MD)

    first, _done = _race(bank, lambda b: _distilled(b, held), lambda b: factories.process_trajectory(trajectory))

    trajectory.refresh_from_db()
    assert trajectory.status_detail == (
        "1 memory item proposed for review. 1 the bank already holds, recorded as supporting evidence on it."
    )
    assert sorted(MemoryItem.objects.filter(bank=bank).values_list("title", flat=True)) == [
        "Answer in the asked format",
        "Prefer the official source",
    ]
    (support,) = MemoryItem.objects.get(pk=first.pk).supports.all()
    assert support.trajectory_ids == [str(trajectory.public_id)]
