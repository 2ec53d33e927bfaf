"""Search pages at scale (goal: ≤ 30 ms server time at 100k rows).

Uses the bank of ``bench/pages.py`` (database ``rb_bench_pages``: 100k
trajectories and 100k memory items in one bank, seeded on the first run and
kept; VACUUM ANALYZE once, as autovacuum would have), then renders the three
search pages — the review queue, the item list, the trajectory list — for
searches of every density: a rare term (a handful of matches), a medium one
(hundreds), a word in every row, a partial word, and text full of tsquery
syntax. Each answer is asserted to be a 200 that shows the expected rows and
match count (the real work). The pages are interleaved per round.

Server time: each page through Django's test client in-process (the whole
middleware stack, view, SQL and template; no socket), p50/p95 per page.

With ``--compare DIR`` (another checkout, e.g. ``/work/wt/base``), a worker
process runs that checkout's code in-process on the same database (this
script with ``RB_BENCH_CODE_ROOT=DIR``) and every request is rendered by
both, alternately, the same way: the before/after ratio of server time and
Python CPU comes from one run, with the load beside each figure.

With ``--before-root DIR`` (another checkout of the code, e.g. the commit
before, exported with ``git archive``), both checkouts also serve the same
database through gunicorn (1 worker each) and every page is fetched from both
alternately over HTTP: the before/after ratio comes from one run. (A
checkout older than migration 0010 searches through the expression indexes
0010 drops: they are created beside the current ones for the comparison,
``bench_before_*``.)

    RB_DATA_DIR=/tmp/rb-bench .venv/bin/python bench/search.py [--n 100000] [--runs 30] [--compare DIR] [--before-root DIR]

Ends with one line per page: ``page=<label> p50_ms=<x> p95_ms=<y> queries=<q> load1=<min>-<max>``
(and ``before_server_p50_ms= server_ratio= before_cpu_p50_ms= cpu_ratio= before_queries=`` with
--compare, ``before_p50_ms= after_p50_ms= ratio=`` over HTTP with --before-root).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from pathlib import Path

os.environ.setdefault("RB_BENCH_DB", "rb_bench_pages")  # the bank of bench/pages.py
sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import load_note, pct, setup_django, start_server, stop_server
from pages import seed

# (label, page, query). The seeded rows: item i is titled "Lesson {i}: verify the price before
# booking", described "Use when booking trip {i % 97}."; trajectory i's task is "Task {i}: book the
# cheapest trip number {i} across town". What each answer must show is read from the database.
CASES = [
    ("review, rare `trip 1234`", "review", "trip 1234"),
    ("review, medium `lesson 12`", "review", "lesson 12"),
    ("review, every row `verif`", "review", "verif"),
    ("review, syntax `foo:*&|!`", "review", "foo:*&|!"),
    ("items, rare `trip 1234`", "items", "trip 1234"),
    ("items, medium `lesson 12`", "items", "lesson 12"),
    ("items, every row `booking`", "items", "booking"),
    ("trajectories, rare `number 4242`", "trajectories", "number 4242"),
    ("trajectories, medium `trip 77`", "trajectories", "trip 77"),
    ("trajectories, every row `cheap`", "trajectories", "cheap"),
]
BEFORE_INDEXES = [
    "CREATE INDEX IF NOT EXISTS bench_before_item_search ON memories_memoryitem USING gin (to_tsvector('simple'::regconfig,"
    " COALESCE(title, '')::text || ' ' || COALESCE(description, '') || ' ' || COALESCE(content, '')))",
    "CREATE INDEX IF NOT EXISTS bench_before_trajectory_search ON trajectories_trajectory USING gin ("
    "to_tsvector('simple'::regconfig, COALESCE(task, '') || ' ' || COALESCE(task_id, '')::text))",
]
PAGE_SIZE = 50
HTMX_TARGET = {"review": "queue", "items": "item-list", "trajectories": "trajectory-rows"}  # the search box's hx-target
COUNT_CAP = 1000


def expected_texts(bank, page: str, q: str) -> list[str]:
    """What page 1 of the search must show, from the selector's own ordered query
    (the plain ORDER BY … LIMIT, no paginator): its first and last rows and the match count."""
    from records.selectors import trajectory_list
    from review.selectors import item_list, review_queue

    if page == "review":
        qs, noun = review_queue(bank=bank, text=q), "proposed"
    elif page == "items":
        qs, noun = item_list(bank=bank, text=q), "in all"
    else:
        qs, noun = trajectory_list(bank=bank, text=q), "in all"
    label = "task" if page == "trajectories" else "title"
    rows = [getattr(row, label).split(":")[0] + ":" for row in qs[:PAGE_SIZE]]
    count = qs.order_by()[: COUNT_CAP + 1].count()
    shown = f"{COUNT_CAP}+" if count > COUNT_CAP else str(count)
    texts = rows[:1] + rows[-1:]
    if page == "review" or count > PAGE_SIZE:  # the pager shows the count from the second page on
        texts.append(f"{shown} {noun}")
    return texts


def check(label: str, status: int, html: str, expected: list[str], *, count: bool = True) -> None:
    """A 200 showing every expected text (with ``count`` False, the rows only:
    a checkout compared with ``--before-root`` may count every match, where
    this one says "1000+")."""
    assert status == 200, (label, status)
    for text in expected if count else [t for t in expected if not t.endswith((" proposed", " in all"))]:
        assert text in html, (label, "missing", text)


def render(client, url: str, htmx: str) -> dict:
    """One request through ``client`` in-process: server ms, this process's CPU ms, SQL ms, queries, the answer."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    headers = {"HX-Request": "true", "HX-Target": htmx} if htmx else {}
    with CaptureQueriesContext(connection) as captured:
        start, cpu = time.perf_counter(), time.process_time()
        response = client.get(url, headers=headers)
        ms, cpu_ms = (time.perf_counter() - start) * 1000, (time.process_time() - cpu) * 1000
    sql_ms = sum(float(q["time"]) for q in captured.captured_queries) * 1000
    return {
        "ms": ms,
        "cpu_ms": cpu_ms,
        "sql_ms": sql_ms,
        "queries": len(captured),
        "status": response.status_code,
        "body": response.content.decode(),
    }


def worker() -> None:
    """``--worker``: the other checkout's side of ``--compare`` (its code is imported:
    RB_BENCH_CODE_ROOT). Logged in as the bench user; renders each JSON line
    ``{"url", "htmx"}`` read on stdin and answers ``render()``'s dict as one line."""
    answers = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)  # whatever the code prints goes to stderr, not into the answers
    setup_django()
    from common import bench_bank
    from django.test import Client

    user, _bank = bench_bank()
    client = Client()
    client.force_login(user)
    answers.write(json.dumps({"ready": str(Path(sys.modules["reasoningbank_site"].__file__).parent.parent)}) + "\n")
    answers.flush()
    for line in sys.stdin:
        ask = json.loads(line)
        answers.write(json.dumps(render(client, ask["url"], ask["htmx"])) + "\n")
        answers.flush()


class CompareWorker:
    """The ``--worker`` process for the checkout at ``root``."""

    def __init__(self, root: Path):
        env = {**os.environ, "RB_BENCH_CODE_ROOT": str(root), "RB_EMBEDDING_PRELOAD": "0"}
        self.proc = subprocess.Popen(
            [sys.executable, str(Path(__file__).resolve()), "--worker"],
            cwd=root,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        ready = json.loads(self.proc.stdout.readline() or "{}")
        assert Path(ready.get("ready", "")).resolve() == root.resolve(), ("the worker runs other code", ready)

    def render(self, url: str, htmx: str) -> dict:
        self.proc.stdin.write(json.dumps({"url": url, "htmx": htmx}) + "\n")
        self.proc.stdin.flush()
        return json.loads(self.proc.stdout.readline())

    def close(self) -> None:
        self.proc.stdin.close()
        self.proc.wait(timeout=30)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=100_000, help="trajectories and items each (the cases assume 100k)")
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--compare", type=Path, help="another checkout, rendered in-process by a worker, interleaved")
    parser.add_argument("--before-root", type=Path, help="another checkout to compare with over HTTP")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker()
        return

    setup_django()
    from django.conf import settings
    from django.db import connection
    from django.test import Client

    user, bank = seed(args.n)
    with connection.cursor() as cur:
        cur.execute("VACUUM ANALYZE memories_memoryitem")
        cur.execute("VACUUM ANALYZE trajectories_trajectory")
        if args.before_root:  # a checkout older than 0010 searches through these expression indexes (0010 drops them)
            for sql in BEFORE_INDEXES:
                cur.execute(sql)
    client = Client()
    client.force_login(user)
    paths = {name: f"/banks/{bank.public_id}/{name}/" for name in ("review", "items", "trajectories")}
    urls = []
    for label, page, q in CASES:
        url = paths[page] + "?" + urllib.parse.urlencode({"q": q})
        expected = expected_texts(bank, page, q)
        urls.append((label, url, expected, ""))
        # What typing in the search box fetches: the list partial (htmx), the rows without the header.
        rows = [text for text in expected if not text.endswith(" proposed")]  # the badge is above the list
        urls.append((label + " (htmx)", url, rows, HTMX_TARGET[page]))
    for label, _, expected, _ in urls:
        print(f"{label}: must show {expected}")

    servers, other = [], None
    times: dict[str, list[float]] = {label: [] for label, *_ in urls}
    cpu_times: dict[str, list[float]] = {label: [] for label, *_ in urls}  # this process's CPU: load-proof-ish
    sql_times: dict[str, list[float]] = {label: [] for label, *_ in urls}
    queries: dict[str, int] = {}
    before: dict[str, list[dict]] = {label: [] for label, *_ in urls}  # --compare: the other checkout's renders
    page_loads: dict[str, list[float]] = {label: [] for label, *_ in urls}  # load1 at each measurement
    http: dict[str, list[list[float]]] = {label: [[], []] for label, *_ in urls}
    loads = [os.getloadavg()[0]]
    try:
        if args.compare:
            other = CompareWorker(args.compare.resolve())
        if args.before_root:
            os.environ["RB_DATABASE_NAME"] = os.environ["RB_BENCH_DB"]
            os.environ["RB_EMBEDDING_PRELOAD"] = "0"  # these pages never embed: start without the model
            for root in (args.before_root.resolve(), Path(__file__).resolve().parent.parent):
                servers.append(start_server(root=root))
        cookie = f"{settings.SESSION_COOKIE_NAME}={client.cookies[settings.SESSION_COOKIE_NAME].value}"

        def fetch_http(base: str, url: str, htmx: str) -> tuple[float, int, str]:
            headers = {"Cookie": cookie, **({"HX-Request": "true", "HX-Target": htmx} if htmx else {})}
            request = urllib.request.Request(base + url, headers=headers)
            start = time.perf_counter()
            with urllib.request.urlopen(request, timeout=120) as response:
                body = response.read().decode()
            return (time.perf_counter() - start) * 1000, response.status, body

        print(f"{args.n:,} trajectories and {args.n:,} items in one bank; {args.runs} rounds; {load_note()}")
        if other:
            print(f"--compare: {args.compare} rendered in-process by a worker, alternately with this checkout")
        for label, url, expected, htmx in urls:  # warm, and check each answer once through every path
            answer = render(client, url, htmx)
            check(label, answer["status"], answer["body"], expected)
            if other:
                answer = other.render(url, htmx)
                check(label + " (before)", answer["status"], answer["body"], expected)
            for _proc, base in servers:
                _, status, body = fetch_http(base, url, htmx)
                check(label + " (http)", status, body, expected, count=False)
        for round_ in range(args.runs):
            for label, url, expected, htmx in urls:
                # Alternate which checkout goes first, so neither always runs on the other's warm caches.
                sides = ("after", "before") if round_ % 2 == 0 else ("before", "after")
                for side in sides if other else ("after",):
                    answer = render(client, url, htmx) if side == "after" else other.render(url, htmx)
                    check(f"{label} ({side})", answer["status"], answer["body"], expected)
                    if side == "before":
                        before[label].append(answer)
                        continue
                    times[label].append(answer["ms"])
                    cpu_times[label].append(answer["cpu_ms"])
                    sql_times[label].append(answer["sql_ms"])
                    queries[label] = answer["queries"]
                page_loads[label].append(os.getloadavg()[0])
                order = (0, 1) if round_ % 2 == 0 else (1, 0)  # alternate which checkout goes first
                for which in order if servers else ():
                    elapsed, status, body = fetch_http(servers[which][1], url, htmx)
                    check(label + " (http)", status, body, expected, count=False)
                    http[label][which].append(elapsed)
            loads.append(os.getloadavg()[0])
    finally:
        if other:
            other.close()
        for proc, _ in servers:
            stop_server(proc)

    print(
        "\n| page | server p50 ms | p95 ms | Python CPU p50 ms | SQL p50 ms | queries | load1 |"
        + (" before: server p50 | CPU p50 | queries | server after ÷ before | CPU after ÷ before |" if other else "")
        + (" HTTP before p50 | HTTP after p50 | after ÷ before |" if servers else "")
    )
    print(
        "|---|---:|---:|---:|---:|---:|---|"
        + ("---:|---:|---:|---:|---:|" if other else "")
        + ("---:|---:|---:|" if servers else "")
    )
    lines = []
    for label, *_ in urls:
        p50, p95 = statistics.median(times[label]), pct(times[label], 95)
        cpu, sql = statistics.median(cpu_times[label]), statistics.median(sql_times[label])
        load = f"{min(page_loads[label]):.1f}-{max(page_loads[label]):.1f}"
        row = f"| {label} | {p50:.1f} | {p95:.1f} | {cpu:.1f} | {sql:.1f} | {queries[label]} | {load} |"
        kind = label.split(",")[0] + ("+htmx" if label.endswith("(htmx)") else "")
        line = f"page={kind}:{label.split('`')[1]!r} p50_ms={p50:.1f} p95_ms={p95:.1f} cpu_p50_ms={cpu:.1f} sql_p50_ms={sql:.1f} queries={queries[label]} load1={load}"
        if other:
            b50 = statistics.median(a["ms"] for a in before[label])
            bcpu = statistics.median(a["cpu_ms"] for a in before[label])
            bq = before[label][-1]["queries"]
            row += f" {b50:.1f} | {bcpu:.1f} | {bq} | {p50 / b50:.2f} | {cpu / bcpu:.2f} |"
            line += f" before_server_p50_ms={b50:.1f} server_ratio={p50 / b50:.2f} before_cpu_p50_ms={bcpu:.1f} cpu_ratio={cpu / bcpu:.2f} before_queries={bq}"
        if servers:
            hb, ha = (statistics.median(t) for t in http[label])
            row += f" {hb:.1f} | {ha:.1f} | {ha / hb:.2f} |"
            line += f" before_p50_ms={hb:.1f} after_p50_ms={ha:.1f} ratio={ha / hb:.2f}"
        print(row)
        lines.append(line)
    print()
    print("\n".join(lines))
    print(f"load1 during the rounds: min {min(loads):.2f} max {max(loads):.2f}; {load_note()}")


if __name__ == "__main__":
    main()
