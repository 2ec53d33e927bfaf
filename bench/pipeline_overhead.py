"""Pipeline overhead: what judging and distilling one trajectory costs besides
the LLM's own time.

    python bench/pipeline_overhead.py [--trajectories 500] [--seed-items 300]

A bank holding ``--seed-items`` approved, embedded items (so the near-duplicate
search has rows to rank), then ``--trajectories`` trajectories ingested through
the service (not timed). Each is then run through the worker's code in this
process — ``trajectories.stages.trajectory_advance``: judge, record the
judgment, distill 3 items (embedding, near-duplicate search, item + version +
audit rows), experience, status moves — against an instant fake LLM at the HTTP
boundary (tests/fake_llm.py: the ``openai`` SDK still makes real HTTP requests).
The time spent inside ``trajectories.llm.chat`` (the SDK round trip) is
subtracted; what remains is the overhead. Asserts every trajectory ended
``done`` with its 3 lessons proposed or recorded as supporting evidence (consolidation).

Prints median/p99 overhead per trajectory, the median of this process's CPU
time in it (load-robust; PostgreSQL's own work is not in it), and its breakdown (medians):
embedding model time, near-duplicate search, database time (every query, the
search included), query count, and the load average."""

from __future__ import annotations

import argparse
import logging
import os
import statistics
import tempfile
import time
import uuid
from contextlib import contextmanager

os.environ.setdefault("RB_BROKER_DIR", tempfile.mkdtemp(prefix="rb-bench-pipeline-broker-"))

from common import ROOT, pct, setup_django  # sets the bench database first

JUDGE = '{"verdict": "success", "rationale": "The tool result shows the fare and the answer matches it."}'
TOPICS = [
    "flights",
    "hotels",
    "trains",
    "museums",
    "restaurants",
    "weather",
    "invoices",
    "calendars",
    "maps",
    "tickets",
]


def distill_answer(n: int) -> str:
    topic = TOPICS[n % len(TOPICS)]
    return "\n".join(
        f"# Memory Item {i}\n## Title\n{title}\n## Description\nUse when a task about {topic} {when}.\n"
        f"## Content\n{content} (seen in run {n}).\n## Steps\n{i}\n"
        for i, (title, when, content) in enumerate(
            [
                (f"Compare every {topic} result", "lists several options", "Read all result pages before choosing"),
                (f"Check the {topic} dates", "depends on a date", "Type the date and confirm it in the summary"),
                (f"Quote the {topic} source", "asks for a fact", "Answer with the figure and where it came from"),
            ],
            start=1,
        )
    )


class Clock:
    """Accumulated wall time per label, for the current trajectory."""

    def __init__(self):
        self.spent: dict[str, float] = {}
        self.queries = 0

    @contextmanager
    def timing(self, label: str):
        started, cpu = time.perf_counter(), time.process_time()
        try:
            yield
        finally:
            self.spent[label] = self.spent.get(label, 0.0) + time.perf_counter() - started
            # This process's CPU (the fake LLM's server thread included, hence subtracted with the LLM's time):
            # less sensitive to the machine's load than wall time; the database's own work is not in it.
            self.spent[label + "_cpu"] = self.spent.get(label + "_cpu", 0.0) + time.process_time() - cpu

    def wrap(self, module, name: str, label: str):
        real = getattr(module, name)

        def timed(*args, **kwargs):
            with self.timing(label):
                return real(*args, **kwargs)

        setattr(module, name, timed)

    def db(self, execute, sql, params, many, context):
        self.queries += 1
        with self.timing("db"):
            return execute(sql, params, many, context)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--trajectories", type=int, default=500)
    parser.add_argument("--seed-items", type=int, default=300)
    args = parser.parse_args()

    import sys

    sys.path.insert(0, str(ROOT))
    from tests.fake_llm import FakeLLM

    fake = FakeLLM().start()
    answers = iter(range(10**9))
    fake.responder = lambda messages: (
        distill_answer(next(answers)) if "memory item" in messages[-1]["content"].lower() else JUDGE
    )
    os.environ["RB_LLM_BASE_URL"] = fake.base_url
    os.environ["OPENAI_API_KEY"] = "bench"
    setup_django()
    from django.conf import settings
    from django.contrib.auth import get_user_model
    from django.db import connection

    import memories.embeddings
    import memories.services.embedding
    import memories.services.items
    import trajectories.stages
    from memories.embeddings import embed_texts, embedding_hash, embedding_model_name, item_embedding_text
    from memories.models import ItemStatus, MemoryItem, MemoryItemSupport, SupportKind
    from tests import factories
    from trajectories.models import Status, Trajectory
    from trajectories.services import trajectory_ingest

    settings.RB_LLM_BASE_URL, settings.OPENAI_API_KEY = fake.base_url, "bench"
    for name in ("httpx", "httpx2"):  # the SDK logs every request at INFO
        logging.getLogger(name).setLevel(logging.WARNING)
    user = get_user_model().objects.create_user(f"bench-{uuid.uuid4().hex[:8]}")
    bank = factories.make_bank(team=factories.make_team(owner=user, slug=f"pipe-{uuid.uuid4().hex[:6]}"))
    seeds = [
        (f"Lesson {n} about {TOPICS[n % 10]}", f"Use when {TOPICS[n % 10]} come up ({n}).", f"Do step {n} first.")
        for n in range(args.seed_items)
    ]
    texts = [item_embedding_text(title=t, description=d, content=c) for t, d, c in seeds]
    vectors = embed_texts(texts)
    MemoryItem.objects.bulk_create(
        MemoryItem(
            bank=bank,
            title=t,
            description=d,
            content=c,
            status=ItemStatus.APPROVED,
            embedding=v,
            embedding_hash=embedding_hash(text),
            embedding_model=embedding_model_name(),
        )
        for (t, d, c), text, v in zip(seeds, texts, vectors, strict=True)
    )
    ids = []
    for n in range(args.trajectories):
        topic = TOPICS[n % len(TOPICS)]
        trajectory, _created = trajectory_ingest(
            bank=bank,
            token=None,
            data={
                "task": f"Find the cheapest {topic} option for trip {n}.",
                "steps": [
                    {
                        "thought": f"Search {topic} page {s}.",
                        "tool": "search",
                        "arguments": {"q": topic, "page": s},
                        "observation": f"{3 + s} results, cheapest {40 + s} EUR",
                    }
                    for s in range(4)
                ],
                "final_answer": f"The cheapest {topic} option is 40 EUR.",
                "agent": "bench-agent",
            },
        )
        ids.append(trajectory.pk)

    clock = Clock()
    clock.wrap(trajectories.stages, "chat", "llm")
    clock.wrap(memories.embeddings, "embed_texts", "embed")  # every embedding goes through it …
    clock.wrap(memories.services.embedding, "embed_texts", "embed")  # … or the name the items' service imported
    for name in ("near_duplicates_search", "near_duplicates_search_many"):
        if hasattr(memories.services.items, name):
            clock.wrap(memories.services.items, name, "near_dup")

    trajectories.stages.trajectory_advance(trajectory_id=ids[0])  # warm: model, prompts, SDK client
    rows = []
    load_before = os.getloadavg()[0]
    with connection.execute_wrapper(clock.db):
        for pk in ids[1:]:
            clock.spent, clock.queries = {}, 0
            with clock.timing("total"):
                trajectories.stages.trajectory_advance(trajectory_id=pk)
            rows.append((dict(clock.spent), clock.queries))
    load_after = os.getloadavg()[0]
    fake.stop()

    done = Trajectory.objects.filter(pk__in=ids, status=Status.DONE).count()
    items = MemoryItem.objects.filter(bank=bank, experience__isnull=False).count()
    # A lesson the bank already holds (same topic, cosine ≥ the bank's duplicate threshold) is recorded as
    # supporting evidence on that item instead of a new proposal: each trajectory leaves 3 of the two together.
    supports = MemoryItemSupport.objects.filter(item__bank=bank, kind=SupportKind.DISTILLED).count()
    assert done == len(ids), f"{len(ids) - done} trajectories did not finish: the fake LLM or a stage failed"
    assert items + supports == 3 * len(ids), f"{items} items + {supports} supports, expected {3 * len(ids)}"
    print(f"learnt: {items} new proposals, {supports} recorded as supporting evidence")
    assert len(fake.requests) == 2 * len(ids), f"{len(fake.requests)} LLM requests for {len(ids)} trajectories"

    def ms(label):
        return [1000 * spent.get(label, 0.0) for spent, _q in rows]

    overhead = [1000 * (spent["total"] - spent.get("llm", 0.0)) for spent, _q in rows]
    cpu = [1000 * (spent["total_cpu"] - spent.get("llm_cpu", 0.0)) for spent, _q in rows]
    print(
        f"trajectories={len(rows)} overhead_p50_ms={statistics.median(overhead):.1f} "
        f"overhead_p99_ms={pct(overhead, 99):.1f} llm_p50_ms={statistics.median(ms('llm')):.1f} "
        f"overhead_cpu_p50_ms={statistics.median(cpu):.1f} "
        f"load1={load_after:.2f} (before {load_before:.2f}) cpus={os.cpu_count()}"
    )
    print(
        "breakdown p50 ms: "
        + " ".join(f"{label}={statistics.median(ms(label)):.1f}" for label in ("embed", "near_dup", "db"))
        + f" queries={statistics.median(q for _s, q in rows):.0f}"
    )


if __name__ == "__main__":
    main()
