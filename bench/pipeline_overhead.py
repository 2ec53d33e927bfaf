"""Pipeline overhead: what judging and distilling one trajectory costs besides
the LLM's own time.

    python bench/pipeline_overhead.py [--trajectories 500] [--seed-items 300] [--compare DIR]

A bank holding ``--seed-items`` approved, embedded items (so the near-duplicate
search has rows to rank), then ``--trajectories`` trajectories ingested through
the service (not timed). Each is then run through the worker's code in this
process — ``trajectories.pipeline.advance.trajectory_advance``: judge, record the
judgment, distill 3 items (embedding, near-duplicate search, item + version +
audit rows), experience, status moves — against an instant fake LLM at the HTTP
boundary (tests/fake_llm.py: the ``openai`` SDK still makes real HTTP requests).
The time spent inside ``trajectories.pipeline.llm.chat`` (the SDK round trip) is
subtracted; what remains is the overhead. Asserts every trajectory ended
``done`` with its 3 lessons proposed or recorded as supporting evidence (consolidation).

Prints median/p99 overhead per trajectory, the median of this process's CPU
time in it (load-robust; PostgreSQL's own work is not in it), and its breakdown (medians):
embedding model time, near-duplicate search, consolidation (the lessons found
again written as supports, its queries included), database time (every query,
the search and consolidation included; a statement outside a transaction
commits in it), the transactions' COMMITs, the rest (Python: prompts, parsing,
the ORM, the SDK's side outside its round trip), query count, the load average, and
this process's CPU in each part (the embedding's is the model's arithmetic).

``--compare DIR`` runs the same benchmark on another checkout of the code
(e.g. the commit before a change) side by side: two processes, one per code
tree (this script's harness, the checkout's code), each with its own bank
and the same trajectories, run in alternating batches of ``--batch`` (which
goes first alternates), so both see the same load; prints both and the ratios."""

from __future__ import annotations

import argparse
import json
import logging
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from contextlib import contextmanager
from pathlib import Path

os.environ.setdefault("RB_BROKER_DIR", tempfile.mkdtemp(prefix="rb-bench-pipeline-broker-"))

from common import ROOT, pct, setup_django  # sets the bench database first

if "--root" in sys.argv:  # a --compare child: that checkout's code (before common's ROOT), this harness
    sys.path.insert(0, sys.argv[sys.argv.index("--root") + 1])

LABELS = ("embed", "near_dup", "consolidate", "db", "commit")

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


def _args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--trajectories", type=int, default=500)
    parser.add_argument("--seed-items", type=int, default=300)
    parser.add_argument("--compare", type=Path, help="another checkout of the code to run side by side")
    parser.add_argument("--batch", type=int, default=20, help="trajectories per turn with --compare")
    parser.add_argument("--root", type=Path, help=argparse.SUPPRESS)  # a --compare child: the code to run
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    return parser.parse_args(argv)


class Bench:
    """One code tree's run: set up, then trajectories in batches, then the checks and figures."""

    def __init__(self, args):
        self.args = args
        from tests.fake_llm import FakeLLM

        self.fake = fake = FakeLLM().start()
        answers = iter(range(10**9))
        fake.responder = lambda messages: (
            distill_answer(next(answers)) if "memory item" in messages[-1]["content"].lower() else JUDGE
        )
        os.environ["RB_LLM_BASE_URL"] = fake.base_url
        os.environ["OPENAI_API_KEY"] = "bench"
        setup_django()
        from django.conf import settings
        from django.contrib.auth import get_user_model

        import memories.embedding.items
        import memories.embedding.model
        import memories.items.services
        import trajectories.pipeline.advance
        import trajectories.pipeline.llm_calls
        from memories.embedding.model import embed_texts, embedding_hash, embedding_model_name, item_embedding_text
        from memories.items.models import ItemStatus, MemoryItem
        from tests import factories
        from trajectories.ingest.record import trajectory_ingest

        settings.RB_LLM_BASE_URL, settings.OPENAI_API_KEY = fake.base_url, "bench"
        for name in ("httpx", "httpx2"):  # the SDK logs every request at INFO
            logging.getLogger(name).setLevel(logging.WARNING)
        user = get_user_model().objects.create_user(f"bench-{uuid.uuid4().hex[:8]}")
        self.bank = bank = factories.make_bank(
            team=factories.make_team(owner=user, slug=f"pipe-{uuid.uuid4().hex[:6]}")
        )
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
        self.ids = ids = []
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

        self.clock = clock = Clock()
        clock.wrap(trajectories.pipeline.llm_calls, "chat", "llm")
        clock.wrap(memories.embedding.model, "embed_texts", "embed")  # every embedding goes through it …
        clock.wrap(memories.embedding.items, "embed_texts", "embed")  # … or the name the items' service imported
        # Whichever names this checkout's items service uses.
        for name, label in (
            ("near_duplicates_search", "near_dup"),
            ("near_duplicates_search_many", "near_dup"),
            ("memory_item_support_record", "consolidate"),
            ("memory_items_support_record", "consolidate"),
        ):
            if hasattr(memories.items.services, name):
                clock.wrap(memories.items.services, name, label)
        from django.db import connection

        clock.wrap(connection, "_commit", "commit")  # a transaction's COMMIT (its WAL flush): not an execute
        self.advance = trajectories.pipeline.advance.trajectory_advance
        self.advance(trajectory_id=ids[0])  # warm: model, prompts, SDK client
        self.todo = iter(ids[1:])
        self.rows = []
        self.load_before = os.getloadavg()[0]

    def run(self, count: int) -> int:
        """Run the next ``count`` trajectories (fewer at the end); returns how many ran."""
        from django.db import connection

        clock, ran = self.clock, 0
        with connection.execute_wrapper(clock.db):
            for pk in self.todo:
                clock.spent, clock.queries = {}, 0
                with clock.timing("total"):
                    self.advance(trajectory_id=pk)
                self.rows.append((dict(clock.spent), clock.queries))
                ran += 1
                if ran == count:
                    break
        return ran

    def finish(self) -> dict:
        """Check what the run did (raises AssertionError otherwise); the figures."""
        from memories.items.models import MemoryItem, MemoryItemSupport, SupportKind
        from trajectories.models import Status, Trajectory

        load_after = os.getloadavg()[0]
        self.fake.stop()
        ids, bank = self.ids, self.bank
        done = Trajectory.objects.filter(pk__in=ids, status=Status.DONE).count()
        items = MemoryItem.objects.filter(bank=bank, experience__isnull=False).count()
        # A lesson the bank already holds (same topic, cosine ≥ the bank's duplicate threshold) is recorded as
        # supporting evidence on that item instead of a new proposal: each trajectory leaves 3 of the two together.
        supports = MemoryItemSupport.objects.filter(item__bank=bank, kind=SupportKind.DISTILLED).count()
        assert done == len(ids), f"{len(ids) - done} trajectories did not finish: the fake LLM or a stage failed"
        assert items + supports == 3 * len(ids), f"{items} items + {supports} supports, expected {3 * len(ids)}"
        assert len(self.fake.requests) == 2 * len(ids), f"{len(self.fake.requests)} LLM requests for {len(ids)}"
        counts = MemoryItem.objects.filter(bank=bank, support_count__gt=0)
        assert sum(counts.values_list("support_count", flat=True)) == supports, "support_count disagrees with rows"
        rows = self.rows

        def ms(label):
            return [1000 * spent.get(label, 0.0) for spent, _q in rows]

        overhead = [1000 * (spent["total"] - spent.get("llm", 0.0)) for spent, _q in rows]
        cpu = [1000 * (spent["total_cpu"] - spent.get("llm_cpu", 0.0)) for spent, _q in rows]
        rest = [o - e - d - c for o, e, d, c in zip(overhead, ms("embed"), ms("db"), ms("commit"), strict=True)]
        return {
            "trajectories": len(rows),
            "items": items,
            "supports": supports,
            "p50": statistics.median(overhead),
            "p99": pct(overhead, 99),
            "cpu_p50": statistics.median(cpu),
            "llm_p50": statistics.median(ms("llm")),
            **{label: statistics.median(ms(label)) for label in LABELS},
            **{f"{label}_cpu": statistics.median(ms(f"{label}_cpu")) for label in LABELS},
            "rest": statistics.median(rest),
            "queries": statistics.median(q for _s, q in rows),
            "load_before": self.load_before,
            "load_after": load_after,
        }


def report(name: str, r: dict) -> None:
    print(f"{name}learnt: {r['items']} new proposals, {r['supports']} recorded as supporting evidence")
    print(
        f"{name}trajectories={r['trajectories']} overhead_p50_ms={r['p50']:.1f} overhead_p99_ms={r['p99']:.1f} "
        f"llm_p50_ms={r['llm_p50']:.1f} overhead_cpu_p50_ms={r['cpu_p50']:.1f} "
        f"load1={r['load_after']:.2f} (before {r['load_before']:.2f}) cpus={os.cpu_count()}"
    )
    print(
        f"{name}breakdown p50 ms: "
        + " ".join(f"{label}={r[label]:.1f}" for label in (*LABELS, "rest"))
        + f" queries={r['queries']:.0f}"
    )
    print(f"{name}this process's CPU p50 ms: " + " ".join(f"{label}={r[label + '_cpu']:.1f}" for label in LABELS))


def child() -> None:
    """A --compare child: set up, then run batches when told (one line per command on stdin)."""
    bench = Bench(_args())
    print("READY", flush=True)
    for line in sys.stdin:
        command, _, value = line.strip().partition(" ")
        if command == "RUN":
            print(f"RAN {bench.run(int(value))}", flush=True)
        elif command == "FINISH":
            print("RESULT " + json.dumps(bench.finish()), flush=True)
            return


def compare(args) -> None:
    """This checkout and ``args.compare`` side by side, in alternating batches."""
    trees = {"this": ROOT, "compare": args.compare.resolve()}
    common = ["--trajectories", str(args.trajectories), "--seed-items", str(args.seed_items)]

    def answer(proc, prefix: str) -> str:
        for line in proc.stdout:
            if line.startswith(prefix):
                return line[len(prefix) :].strip()
            print(line, end="")
        raise RuntimeError(f"a child exited before answering {prefix!r}")

    procs = {}
    for name, root in trees.items():  # one after the other: the first creates and migrates the database
        procs[name] = subprocess.Popen(
            [sys.executable, __file__, "--child", "--root", str(root), *common],
            cwd=root,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        answer(procs[name], "READY")
    order, left = list(procs), {name: args.trajectories - 1 for name in procs}
    while any(left.values()):
        for name in order:
            if left[name]:
                procs[name].stdin.write(f"RUN {args.batch}\n")
                procs[name].stdin.flush()
                left[name] -= int(answer(procs[name], "RAN "))
        order.reverse()  # the other goes first next turn
    results = {}
    for name, proc in procs.items():
        proc.stdin.write("FINISH\n")
        proc.stdin.flush()
        results[name] = json.loads(answer(proc, "RESULT "))
        proc.wait(timeout=60)
    for name in procs:
        report(f"[{name}: {trees[name]}] ", results[name])
    this, other = results["this"], results["compare"]
    print(
        f"this ÷ compare: p50 {this['p50'] / other['p50']:.2f}×, p99 {this['p99'] / other['p99']:.2f}×, "
        f"CPU p50 {this['cpu_p50'] / other['cpu_p50']:.2f}×, queries {this['queries']:.0f} vs {other['queries']:.0f}, "
        f"batches of {args.batch}, load1 {os.getloadavg()[0]:.2f}"
    )


def main() -> None:
    args = _args()
    if args.compare:
        compare(args)
        return
    bench = Bench(args)
    bench.run(len(bench.ids))
    report("", bench.finish())


if __name__ == "__main__":
    if "--child" in sys.argv:
        child()
    else:
        main()
