"""The bank ``scale.py`` measures, built by COPY into the models' own tables:
``n`` trajectories over 365 days (4-8 steps, ~1.5 KB; mostly done), one LLM
judgment each and a human one for 1 % (a third of those disagreeing), about
one retrieval per trajectory (5 served items, a 10 % holdout arm) with the
retrievals' counters and Impact tallies computed from them by the project's own
rebuild (trajectories.judging.verdicts.retrieval_outcomes_rebuild), n/10
approved and n/50 proposed items (versions, embeddings near a small set of
real ones, the HNSW index built over all of them), three releases (the last
leaving a draft), and 20 small banks beside it. The tallies are then merged
and rolled up by month as beat's memories.compact_tallies keeps them
(tally_upkeep), so the Impact page is measured in its steady state; a
database seeded before that part existed gets it on the next run.

Each part runs in its own transaction and leaves a row in
``bench_scale_parts``; a run that stopped half-way resumes at the first
missing part. ``bench_scale_parts`` holding ``complete`` marks a finished
database. Import after common.setup_django()."""

from __future__ import annotations

import functools
import random
import sys
import time
import uuid
from datetime import timedelta

from django.db import connection, transaction

OTHER_BANKS = 20
DAYS = 365
STEP_TEMPLATES = [
    ("user", "Book the cheapest refundable flight from Lisbon to Berlin next Friday for two adults, aisle seats."),
    ("thought", "I should search the airline aggregator first and compare the refundable fares only. " * 2),
    ("tool_call", ""),
    ("tool_result", "Results: TP540 89 EUR refundable, LH1173 112 EUR, FR8421 45 EUR non-refundable. " * 4),
    ("thought", "The cheapest refundable one is TP540; check the seat map before booking. " * 2),
    ("tool_call", ""),
    ("tool_result", "Seat map: 12C and 12D free (aisle). Total with taxes 178 EUR for two adults. " * 3),
    ("answer", "Booked TP540 on Friday, seats 12C/12D, 178 EUR total, confirmation QX7Y2."),
]
TOPICS = [
    "book the cheapest refundable flight",
    "reconcile the monthly invoices",
    "fix the failing CI job",
    "summarise the support ticket",
    "migrate the user table",
    "answer the billing question",
    "plan the team offsite",
    "triage the security alert",
]


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def steps_for(i: int) -> list[dict]:
    """4-8 steps, about 1.5 KB, varying with ``i``."""
    count = 4 + i % 5
    picked = STEP_TEMPLATES[:2] + STEP_TEMPLATES[2 : 2 + count - 3] + STEP_TEMPLATES[-1:]
    out = []
    for index, (kind, content) in enumerate(picked):
        step = {"index": index, "kind": kind, "content": content}
        if kind == "tool_call":
            step.update(name="search", arguments=f'{{"q": "flights {i}"}}', call_id=f"c{index}")
        out.append(step)
    return out


class Copier:
    """COPY rows of a model: every concrete column, the ones not given filled with the field's default."""

    def __init__(self, model, given: tuple[str, ...]):
        self.model = model
        from django.db.models.expressions import DatabaseDefault

        self.plan = []
        for f in model._meta.concrete_fields:
            if f.generated or (f.primary_key and f.attname not in given):
                continue
            if f.attname in given:
                self.plan.append((f, None, True))
                continue
            value = f.get_default()
            if isinstance(value, DatabaseDefault):
                continue  # the column's own default
            per_row = callable(f.default) and getattr(f.default, "__name__", "") in ("uuid4", "uuid7", "now")
            self.plan.append((f, f.default if per_row else f.get_db_prep_save(value, connection), False))
        self.columns = [f.column for f, _, _ in self.plan]
        self.given = given

    def copy(self, rows) -> int:
        """COPY ``rows`` (dicts by attname); returns how many."""
        table = self.model._meta.db_table
        sql = f"COPY {table} ({', '.join(self.columns)}) FROM STDIN"
        done = 0
        with connection.cursor() as cur, cur.cursor.copy(sql) as copy:
            for row in rows:
                out = []
                for f, fixed, given in self.plan:
                    if given:
                        out.append(f.get_db_prep_save(row[f.attname], connection))
                    elif callable(fixed):
                        out.append(fixed())
                    else:
                        out.append(fixed)
                copy.write_row(out)
                done += 1
        return done


def reserve_ids(model, n: int) -> int:
    """The first of ``n`` primary keys reserved from the table's sequence."""
    table = model._meta.db_table
    with connection.cursor() as cur:
        cur.execute("SELECT pg_get_serial_sequence(%s, 'id')", [table])
        (seq,) = cur.fetchone()
        cur.execute("SELECT nextval(%s)", [seq])
        (first,) = cur.fetchone()
        cur.execute("SELECT setval(%s, %s)", [seq, first + n])
    return first


def _parts_table() -> set[str]:
    with connection.cursor() as cur:
        cur.execute(
            "CREATE TABLE IF NOT EXISTS bench_scale_parts (name text PRIMARY KEY, n int, seconds float, "
            "at timestamptz DEFAULT now())"
        )
        cur.execute("SELECT name FROM bench_scale_parts")
        return {row[0] for row in cur.fetchall()}


def _part_done(name: str, n: int, seconds: float) -> None:
    with connection.cursor() as cur:
        cur.execute("INSERT INTO bench_scale_parts (name, n, seconds) VALUES (%s, %s, %s)", [name, n, seconds])


def seeded_parts() -> dict[str, float]:
    _parts_table()
    with connection.cursor() as cur:
        cur.execute("SELECT name, seconds FROM bench_scale_parts ORDER BY at")
        return dict(cur.fetchall())


@functools.cache
def _base_vectors():
    from memories.embedding.model import embed_texts

    return embed_texts([f"How to {topic}, step {j}" for topic in TOPICS for j in range(8)])


def _vectors(count: int, seed: int):
    """``count`` unit vectors near the real embeddings of a few task texts."""
    import numpy as np

    base = _base_vectors()
    rng = np.random.default_rng(seed)
    picks = base[rng.integers(0, len(base), count)] + rng.normal(0, 0.03, (count, base.shape[1]))
    return picks / np.linalg.norm(picks, axis=1, keepdims=True)


def _items(bank, count_approved: int, count_proposed: int, start: int, user, seed: int, now) -> list[uuid.UUID]:
    """COPY approved then proposed items with version 1; returns the approved ones' public ids."""
    from memories.embedding.model import embedding_hash, embedding_model_name, item_embedding_text
    from memories.items.models import MemoryItem, MemoryItemVersion

    model = embedding_model_name()
    total = count_approved + count_proposed
    vectors = _vectors(total, seed)
    first = reserve_ids(MemoryItem, total)
    approved: list[uuid.UUID] = []
    rng = random.Random(seed)

    def rows():
        for j in range(total):
            i = start + j
            status = "approved" if j < count_approved else "proposed"
            title = f"Lesson {i}: before you {TOPICS[i % len(TOPICS)]}, check the second source"
            description = f"Use when asked to {TOPICS[i % len(TOPICS)]} (case {i % 97})."
            content = "Compare at least two sources, re-check the totals with taxes, and say which one you used."
            created = now - timedelta(days=rng.uniform(0, DAYS))
            public_id = uuid.uuid4()
            if status == "approved":
                approved.append(public_id)
            yield {
                "id": first + j,
                "public_id": public_id,
                "bank_id": bank.pk,
                "title": title,
                "description": description,
                "content": content,
                "status": status,
                "origin": ("success", "failure", "matts-parallel", "manual")[i % 4],
                "verdict_label": ("success", "failure")[i % 2],
                "tags": [TOPICS[i % len(TOPICS)].split()[0]],
                "source_agents": [f"agent-{i % 8}"],
                "embedding": vectors[j].tolist(),
                "embedding_hash": embedding_hash(
                    item_embedding_text(title=title, description=description, content=content), model
                ),
                "embedding_model": model,
                "created_at": created,
                "updated_at": created,
                "approved_at": created if status == "approved" else None,
                "approved_by_id": user.pk if status == "approved" else None,
                "near_duplicates": [{"id": str(uuid.uuid4()), "similarity": 0.91}] if i % 7 == 0 else [],
            }

    Copier(
        MemoryItem,
        (
            "id", "public_id", "bank_id", "title", "description", "content", "status", "origin", "verdict_label",
            "tags", "source_agents", "embedding", "embedding_hash", "embedding_model", "created_at", "updated_at",
            "approved_at", "approved_by_id", "near_duplicates",
        ),
    ).copy(rows())  # fmt: skip
    with connection.cursor() as cur:  # version 1 of each, from the item itself
        cur.execute(
            f"INSERT INTO {MemoryItemVersion._meta.db_table} (item_id, number, title, description, content, status,"
            " tags, action, note, author_id, created_at) SELECT id, 1, title, description, content, status, tags,"
            " CASE WHEN status = 'approved' THEN 'approved' ELSE 'created' END, '', approved_by_id, created_at"
            f" FROM {MemoryItem._meta.db_table} WHERE id >= %s AND id < %s",
            [first, first + total],
        )
    return approved


def _activity(bank, n: int, approved: list[uuid.UUID], reviewers: list, seed: int, now) -> None:
    """COPY ``n`` trajectories, their retrievals and judgments, then rebuild the retrievals' counters and tallies."""
    from memories.serving.models import RetrievalEvent
    from reasoningbank_site.ids import uuid7
    from trajectories.judging.verdicts import retrieval_outcomes_rebuild
    from trajectories.models import Judgment, Trajectory
    from trajectories.records.models import RawRecord

    rng = random.Random(seed)
    offsets = sorted((rng.uniform(0, DAYS * 86400) for _ in range(n)), reverse=True)
    created = [now - timedelta(seconds=s) for s in offsets]  # oldest first, as ids grow
    first_t = reserve_ids(Trajectory, n)
    first_r = reserve_ids(RetrievalEvent, n)
    retrieved = [rng.random() < 0.95 for _ in range(n)]
    statuses = [("done",) * 97 + ("needs_attention",) * 2 + ("awaiting_llm",)][0]
    status = [statuses[rng.randrange(100)] for _ in range(n)]
    llm = [("success", "failure")[rng.random() < 0.4] for _ in range(n)]
    human = {}
    for j in range(n):
        if status[j] != "awaiting_llm" and rng.random() < 0.01:
            human[j] = llm[j] if rng.random() < 0.67 else ("failure" if llm[j] == "success" else "success")

    def retrievals():
        for j in range(n):
            if not retrieved[j]:
                continue
            holdout = rng.random() < 0.1
            served = rng.sample(approved, 5) if approved else []
            yield {
                "id": first_r + j,
                "public_id": uuid7(),
                "bank_id": bank.pk,
                "query": f"Task {j}: {TOPICS[j % len(TOPICS)]} number {j}",
                "task_id": f"task-{j}",
                "mode": "items",
                "k": 5,
                "arm": "holdout" if holdout else "treatment",
                "results": [{"id": str(item), "score": round(0.9 - 0.02 * r, 3)} for r, item in enumerate(served)],
                "holdout_fraction": 0.1,
                "latency_ms": 12.0 + j % 17,
                "memory_tokens": 0 if holdout else 320,
                "release": 1,
                "served_counted": True,
                "created_at": created[j] - timedelta(seconds=30),
            }

    def raw_records():
        for j in range(n):
            yield {
                "trajectory_id": first_t + j,
                "bank_id": bank.pk,
                "created_at": created[j],
                "steps": steps_for(j),
                "final_answer": f"Answer {j}: done as asked.",
            }

    def trajectories():
        for j in range(n):
            steps = steps_for(j)
            verdict = human.get(j, llm[j]) if status[j] != "awaiting_llm" else ""
            usage = j % 2 == 0
            yield {
                "id": first_t + j,
                "bank_id": bank.pk,
                "task": f"Task {j}: {TOPICS[j % len(TOPICS)]} number {j}",
                "task_id": f"task-{j}",
                "step_count": len(steps),
                "agent": f"agent-{j % 8}",
                "status": status[j],
                "verdict": verdict,
                "verdict_tier": 3 if j in human else (2 if verdict else 0),
                "retrieval_id": first_r + j if retrieved[j] else None,
                "prompt_tokens": 900 + j % 300 if usage else None,
                "completion_tokens": 200 + j % 50 if usage else None,
                "enqueued_at": created[j],
                "created_at": created[j],
                "updated_at": created[j] + timedelta(minutes=2),
            }

    def judgments():
        for j in range(n):
            if status[j] == "awaiting_llm":
                continue
            yield {
                "trajectory_id": first_t + j,
                "source": "llm",
                "label": llm[j],
                "rationale": "The answer matches the task's constraints.",
                "model": "judge-model",
                "prompt_version": "judge/v1",
                "author_id": None,
                "created_at": created[j] + timedelta(minutes=1),
            }
            if j in human:
                yield {
                    "trajectory_id": first_t + j,
                    "source": "human",
                    "label": human[j],
                    "rationale": "Checked by hand.",
                    "model": "",
                    "prompt_version": "",
                    "author_id": reviewers[j % len(reviewers)].pk,
                    "created_at": created[j] + timedelta(days=1),
                }

    given_r = (
        "id", "public_id", "bank_id", "query", "task_id", "mode", "k", "arm", "results", "holdout_fraction",
        "latency_ms", "memory_tokens", "release", "served_counted", "created_at",
    )  # fmt: skip
    Copier(RetrievalEvent, given_r).copy(retrievals())
    given_t = (
        "id", "bank_id", "task", "task_id", "step_count", "agent", "status", "verdict", "verdict_tier",
        "retrieval_id", "prompt_tokens", "completion_tokens", "enqueued_at", "created_at", "updated_at",
    )  # fmt: skip
    Copier(Trajectory, given_t).copy(trajectories())
    Copier(RawRecord, ("trajectory_id", "bank_id", "created_at", "steps", "final_answer")).copy(raw_records())
    given_j = ("trajectory_id", "source", "label", "rationale", "model", "prompt_version", "author_id", "created_at")
    Copier(Judgment, given_j).copy(judgments())
    retrieval_outcomes_rebuild(bank=bank)


def seed(n: int, other_banks: int = OTHER_BANKS) -> dict[str, float]:
    """Build (or finish) the database for ``n`` trajectories; returns each part's seconds."""
    from common import bench_bank
    from django.contrib.auth import get_user_model
    from django.utils import timezone

    from accounts.models import Bank
    from accounts.teams.banks import bank_create
    from memories.releases.publishing import release_publish

    done = _parts_table()
    if "complete" in done:
        if TALLY_UPKEEP not in done:  # a database seeded before this part existed
            _tally_upkeep_part(n, vacuum=True)
        return seeded_parts()
    now = timezone.now()
    user, bank = bench_bank()
    User = get_user_model()
    reviewers = [user] + [
        User.objects.filter(username=f"reviewer-{r}").first() or User.objects.create_user(f"reviewer-{r}")
        for r in range(4)
    ]
    approved_n, proposed_n = n // 10, n // 50
    chunks = [int(approved_n * 0.95), int(approved_n * 0.99)]
    plan = [
        ("items", lambda: _items(bank, chunks[0], proposed_n, 0, user, 1, now)),
        ("release 1", lambda: release_publish(bank=bank, actor=user, note="first")),
        ("items 2", lambda: _items(bank, chunks[1] - chunks[0], 0, chunks[0] + proposed_n, user, 2, now)),
        ("release 2", lambda: release_publish(bank=bank, actor=user, note="second")),
        ("items 3", lambda: _items(bank, approved_n - chunks[1], 0, approved_n + proposed_n, user, 3, now)),
    ]
    for name, step in plan:
        if name in done:
            continue
        started = time.perf_counter()
        with transaction.atomic():
            if name == "items":
                with connection.cursor() as cur:  # built once over all of them, below
                    cur.execute("DROP INDEX IF EXISTS memoryitem_embedding_hnsw")
            step()
            _part_done(name, n, time.perf_counter() - started)
        log(f"{name}: {time.perf_counter() - started:.1f} s")

    def approved_ids():
        from memories.items.models import MemoryItem

        return list(MemoryItem.objects.filter(bank=bank, status="approved").values_list("public_id", flat=True))

    def others():
        for b in range(other_banks):
            other = Bank.objects.filter(slug=f"other-{b}").first() or bank_create(
                team=bank.team, name=f"Other {b}", slug=f"other-{b}"
            )
            ids = _items(other, 50, 10, 0, user, 100 + b, now)
            _activity(other, max(20, n // 2000), ids, reviewers, 100 + b, now)

    rest = [
        ("activity", lambda: _activity(bank, n, approved_ids(), reviewers, 7, now)),
        ("other banks", others),
    ]
    for name, step in rest:
        if name in done:
            continue
        started = time.perf_counter()
        with transaction.atomic():
            step()
            _part_done(name, n, time.perf_counter() - started)
        log(f"{name}: {time.perf_counter() - started:.1f} s")
    if TALLY_UPKEEP not in done:
        _tally_upkeep_part(n, vacuum=False)  # the VACUUM ANALYZE below covers it
    for name, sql in (
        ("hnsw", None),
        ("vacuum analyze", "VACUUM ANALYZE"),
    ):
        if name in done:
            continue
        started = time.perf_counter()
        if sql:
            with connection.cursor() as cur:
                cur.execute(sql)
        else:
            hnsw_build()
        _part_done(name, n, time.perf_counter() - started)
        log(f"{name}: {time.perf_counter() - started:.1f} s")
    _part_done("complete", n, 0.0)
    return seeded_parts()


TALLY_UPKEEP = "tally upkeep"


def tally_upkeep() -> int:
    """What beat's memories.compact_tallies does to the Impact tallies (merge
    the appended rows, roll up the months older than ROLLUP_AFTER_DAYS), so
    the bench measures the steady state production keeps, not a year of
    daily rows no beat ever folded. Returns the rows it merged or folded."""
    from memories.tasks import retrieval_tallies_compact_task

    return retrieval_tallies_compact_task()


def _tally_upkeep_part(n: int, *, vacuum: bool) -> None:
    started = time.perf_counter()
    with transaction.atomic():
        folded = tally_upkeep()
        _part_done(TALLY_UPKEEP, n, time.perf_counter() - started)
    if vacuum:
        from memories.serving.models import RetrievalTally

        with connection.cursor() as cur:
            cur.execute(f"VACUUM ANALYZE {RetrievalTally._meta.db_table}")
    log(f"{TALLY_UPKEEP}: {folded} rows folded, {time.perf_counter() - started:.1f} s")


def hnsw_build() -> float:
    """(Re)build the items' HNSW index as its migration defines it, with the server's own settings; seconds."""
    from memories.items.models import MemoryItem

    index = next(i for i in MemoryItem._meta.indexes if i.name == "memoryitem_embedding_hnsw")
    started = time.perf_counter()
    with connection.schema_editor(atomic=False) as editor, connection.cursor() as cur:
        cur.execute("DROP INDEX IF EXISTS memoryitem_embedding_hnsw")
        editor.add_index(MemoryItem, index)
    return time.perf_counter() - started
