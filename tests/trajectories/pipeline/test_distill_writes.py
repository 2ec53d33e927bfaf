"""What one distillation writes, and in how many model calls and queries
(the pipeline's overhead per trajectory): the items and the
new experience's task embedded in one batch, the items' first versions and
audit events in one insert each, lessons found again written as supports
together — with the same rows as one at a time."""

from __future__ import annotations

import numpy as np
import psycopg
import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from accounts.models import AuditEvent
from memories.embedding.model import embed_text, get_model, item_embedding_text
from memories.items.models import MemoryItem, SupportKind
from tests.factories import process_trajectory
from tests.trajectories.llm_answers import ITEMS_MD, JUDGE_SUCCESS
from trajectories.models import Status


def test_a_distillation_embeds_items_and_task_in_one_model_call(fake_llm, make_trajectory, monkeypatch):
    fake_llm.reply(JUDGE_SUCCESS).reply(ITEMS_MD)
    model = get_model()
    batches = []
    real_encode = model.encode
    monkeypatch.setattr(model, "encode", lambda texts, **kw: batches.append(list(texts)) or real_encode(texts, **kw))

    t = process_trajectory(make_trajectory())

    assert t.status == Status.DONE, t.status_detail
    items = list(MemoryItem.objects.filter(experience=t.experience).order_by("pk"))
    assert len(items) == 2
    texts = [item_embedding_text(title=i.title, description=i.description, content=i.content) for i in items]
    assert batches == [[*texts, t.task]]
    monkeypatch.undo()
    for item, text in zip(items, texts, strict=True):
        assert np.allclose(item.embedding, embed_text(text), atol=1e-5)
    assert np.allclose(t.experience.embedding, embed_text(t.task), atol=1e-5)


def test_a_distillations_versions_and_audit_events_are_each_items_own(fake_llm, make_trajectory):
    fake_llm.reply(JUDGE_SUCCESS).reply(ITEMS_MD)
    t = process_trajectory(make_trajectory())

    items = list(MemoryItem.objects.filter(experience=t.experience).order_by("pk"))
    for item in items:
        version = item.versions.get()
        assert (version.number, version.action, version.note, version.author) == (
            1,
            "created",
            "distilled (success)",
            None,
        )
        assert (version.title, version.content, version.status) == (item.title, item.content, "proposed")
    events = AuditEvent.objects.filter(bank=t.bank, action="memory_item.create").order_by("pk")
    assert [(e.object_id, e.object_repr) for e in events] == [(str(i.public_id), str(i)) for i in items]
    assert [e.after["title"] for e in events] == [i.title for i in items]
    assert all(e.before is None and e.after["note"] == "distilled (success)" and e.team == t.bank.team for e in events)


def test_a_trajectory_teaching_known_lessons_is_judged_and_distilled_in_a_bounded_number_of_queries(
    fake_llm, make_trajectory
):
    fake_llm.reply(JUDGE_SUCCESS).reply(ITEMS_MD)
    first = process_trajectory(make_trajectory())
    items = list(MemoryItem.objects.filter(experience=first.experience).order_by("pk"))
    later = make_trajectory()
    fake_llm.reply(JUDGE_SUCCESS).reply(ITEMS_MD)  # the same two lessons again

    with CaptureQueriesContext(connection) as captured:
        later = process_trajectory(later)

    assert later.status == Status.DONE
    assert later.status_detail == (
        "0 memory items proposed for review. 2 the bank already holds, recorded as supporting evidence on it."
    )
    for item in items:
        item.refresh_from_db()
        (support,) = item.supports.all()
        assert (item.support_count, support.kind, support.trajectory_ids) == (
            1,
            SupportKind.DISTILLED,
            [str(later.public_id)],
        )
        assert [v.action for v in item.versions.order_by("number")] == ["created", "supported"]
    # 17 of the pipeline: the row read once (its bank, its LLM judgments' versions, the bank's active
    # prompts), the take, the bank's learning policy (read once for the distillation); the judge's commit not waiting for disk; under the row lock (the active prompts read again)
    # the judgments, the judgment, and the
    # verdict with the move on to distilling (one UPDATE); under the lock the experience, the bank's proposal lock
    # (the one near-duplicate check's, so two distillations of the bank never both queue a lesson), the near-duplicate search
    # and its scan settings, the items locked, their latest versions (read after the lock: a concurrent writer's
    # version is then seen), one counter update, one insert each of the supports, versions and audit events
    # (bulk_create per model), and the move to done that links the experience; one upsert
    # of each LLM call's tokens (2). Plus the test transaction's savepoints (4) and the row read back at the end.
    assert len(captured) <= 27, "\n".join(q["sql"][:90] for q in captured.captured_queries)


@pytest.mark.django_db(transaction=True)
def test_only_the_take_and_the_verdict_commit_without_waiting_for_disk(fake_llm, make_trajectory):
    """As in a worker (no test transaction around it): the take's transaction
    and the judge's transaction (judgment, verdict, taken for distillation)
    commit without waiting for the WAL flush; the items' transaction waits for
    disk, nothing leaks into the connection's next transaction, and another
    connection sees every row."""
    fake_llm.reply(JUDGE_SUCCESS).reply(ITEMS_MD)
    t = make_trajectory()

    with CaptureQueriesContext(connection) as captured:
        t = process_trajectory(t)

    statements = [q["sql"] for q in captured.captured_queries]
    weakened = [n for n, sql in enumerate(statements) if "synchronous_commit" in sql]
    # each right after its BEGIN: the take's UPDATE, the judge's read of its row under the lock
    assert [statements[n - 1] for n in weakened] == ["BEGIN", "BEGIN"], statements
    assert [statements[n + 1].split()[0] for n in weakened] == ["UPDATE", "SELECT"], statements
    assert "FOR UPDATE" in statements[weakened[1] + 1]
    assert statements[weakened[0] + 2] == "COMMIT"  # the take is a transaction of its own
    with connection.cursor() as cursor:
        cursor.execute("SHOW synchronous_commit")
        assert cursor.fetchone()[0] == "on"
    with psycopg.connect(**connection.get_connection_params(), autocommit=True) as other:
        status, experience_id = other.execute(
            "SELECT status, experience_id FROM trajectories_trajectory WHERE id = %s", [t.pk]
        ).fetchone()
        (judgments,) = other.execute(
            "SELECT count(*) FROM trajectories_judgment WHERE trajectory_id = %s AND source = 'llm'", [t.pk]
        ).fetchone()
        (items,) = other.execute(
            "SELECT count(*) FROM memories_memoryitem WHERE experience_id = %s", [experience_id]
        ).fetchone()
    assert (status, judgments, items) == (Status.DONE, 1, 2)
    assert t.status_detail == "2 memory items proposed for review." and t.verdict == "success"
