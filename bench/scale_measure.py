"""scale.py's measurements: what a reviewer, an agent and the operator do, at
each size, through the URLs (a real gunicorn per size) and the public
functions, interleaved between the sizes."""

from __future__ import annotations

import http.client
import json
import statistics
import time
from collections import defaultdict

import common
import scale_seed

DASHBOARD_REPORT = "dashboard report, computed (worker)"
REVIEWERS_REPORT = "reviewers figures, computed (worker)"
ITEM_TABLE = "Impact per-item table, all time, computed (worker)"
WORKER_ROWS = (DASHBOARD_REPORT, REVIEWERS_REPORT, ITEM_TABLE)
RETENTION_SHARE = 0.02  # the oldest 2 % of the bank's trajectories are purged at both sizes
PURGE_TABLE = "bench_scale_purged"
PURGE_ROUNDS = 3  # purges per size (each of the same rows, put back after): the median's ms per row is reported


class Site:
    """One size's database, served by its own gunicorn, with a signed-in reviewer and an API token."""

    def __init__(self, n: int, use_db):
        from django.conf import settings
        from django.test import Client

        from accounts.models import Bank
        from accounts.tokens.services import api_token_create
        from trajectories.models import Trajectory

        self.n, self.use_db = n, use_db
        use_db(n)
        user, bank = common.bench_bank()
        # As bench/retrieval.py: no rate limit, and every query serves k items (the floor finds k too).
        Bank.objects.filter(pk=bank.pk).update(rate_limit_per_minute=0, min_similarity=-1.0)
        self.bank = Bank.objects.get(pk=bank.pk)
        # What earlier runs' batch ingests added: gone, so each run measures the bank as seeded.
        Trajectory.objects.filter(bank=self.bank, task__regex=r"^(Task ingested|Ingested) ").delete()
        client = Client()
        client.force_login(user)
        self.cookie = f"{settings.SESSION_COOKIE_NAME}={client.cookies[settings.SESSION_COOKIE_NAME].value}"
        self.secret = api_token_create(bank=self.bank, name="scale bench", scopes=["retrieve", "ingest"]).secret
        middle = Trajectory.objects.filter(bank=self.bank, task__startswith=f"Task {n // 2}:").get()
        self.trajectory = middle.public_id
        self.proposed = n // 50
        self.server, self.base = common.start_server(threads=4)
        host, port = self.base.removeprefix("http://").split(":")
        self.host, self.port = host, int(port)

    def switch(self) -> None:
        """This process's Django connection on this size's database (no migrate: use_db did it)."""
        from django.conf import settings
        from django.db import connection
        from scale import db_name

        name = db_name(self.n)
        if connection.settings_dict["NAME"] != name:
            connection.close()
            settings.DATABASES["default"]["NAME"] = name
            connection.settings_dict["NAME"] = name

    def get(self, path: str, *, htmx: str = "", first_byte: bool = False) -> tuple[float, bytes]:
        """ms for a GET of ``path`` (to its first body byte with ``first_byte``), and the body read; ``htmx``
        names the element an htmx request targets (its id, the HX-Target header htmx sends)."""
        conn = http.client.HTTPConnection(self.host, self.port, timeout=600)
        headers = {"Cookie": self.cookie}
        if htmx:
            headers |= {"HX-Request": "true", "HX-Target": htmx}
        started = time.perf_counter()
        conn.request("GET", path, headers=headers)
        response = conn.getresponse()
        body = response.read(1) if first_byte else response.read()
        elapsed = (time.perf_counter() - started) * 1000
        assert response.status == 200, (path, response.status, body[:300])
        conn.close()
        return elapsed, body

    def stop(self) -> None:
        common.stop_server(self.server)


def pages(site: Site) -> list[tuple[str, str, dict, callable]]:
    """(what, path, request options, check of the body) of every reviewer page."""
    b = site.bank.public_id
    n = site.n
    deep = max(1, site.proposed // 50)

    def shows(*texts):
        return lambda body: all(t.encode() in body for t in texts)

    return [
        ("dashboard", f"/banks/{b}/", {}, shows(site.bank.name)),
        # What the browser's 5-second refresh asks for (hx-get on #live): that region alone, not the whole page.
        (
            "dashboard live refresh",
            f"/banks/{b}/",
            {"htmx": "live"},
            lambda body: body.lstrip().startswith(b'<div id="live"'),
        ),
        ("Impact", f"/banks/{b}/impact/", {}, shows(site.bank.name)),
        ("releases", f"/banks/{b}/releases/", {}, shows(site.bank.name)),
        ("review queue", f"/banks/{b}/review/", {}, shows("Lesson ")),
        ("review queue, deep page", f"/banks/{b}/review/?page={deep}", {}, shows("Lesson ")),
        ("trajectory list", f"/banks/{b}/trajectories/", {}, shows("Task ")),
        ("trajectory page", f"/banks/{b}/trajectories/{site.trajectory}/", {}, shows(f"Task {n // 2}:")),
        ("trajectory search", f"/banks/{b}/trajectories/?q=number+{n // 3}", {}, shows(f"Task {n // 3}:")),
        ("items list", f"/banks/{b}/items/", {}, shows("Lesson ")),
        ("items, approved", f"/banks/{b}/items/?status=approved", {}, shows("Lesson ")),
        ("reviewers", f"/banks/{b}/reviewers/", {}, shows("reviewer-")),
        ("team", f"/teams/{site.bank.team.public_id}/", {}, shows(site.bank.name)),
        ("evaluations", f"/banks/{b}/evaluations/", {}, shows(site.bank.name)),
    ]


def exports(site: Site) -> list[tuple[str, str]]:
    b = site.bank.public_id
    return [
        ("export: chat JSONL, successes", f"/banks/{b}/export/chat.jsonl?verdict=success"),
        ("export: judge eval set", f"/banks/{b}/export/judge-eval.jsonl"),
        ("export: reasoning-bank memories", f"/banks/{b}/export/reasoning-bank.jsonl"),
        ("export: items JSONL", f"/banks/{b}/items/export.jsonl"),
    ]


QUERIES = [f"How to {topic}" for topic in scale_seed.TOPICS]


RETRIEVAL_MODES = ("retrieve, new connection", "retrieve, kept connection", "floor")


def retrieval(site: Site, kept: common.KeptConnection, i: int) -> dict[str, float]:
    """One retrieval in each mode (through HTTP with a connection per request; over one kept connection; the
    floor in this process), in an order rotated per run, each with a query of its own on topics of its own (two
    per mode, alternating: every mode meets a topic again after the same number of runs).
    A query's first search reads the HNSW pages its path through the graph needs, which at 1M items are not all
    in PostgreSQL's cache after the pages and exports measured just before: a floor that searched the first
    request's vector again, or a kept request that searched it with one word more, found them cached and left
    that cost to whichever mode came first. Here every mode pays for a vector of its own and each goes first
    in one run of three."""
    modes = RETRIEVAL_MODES[i % 3 :] + RETRIEVAL_MODES[: i % 3]
    times = {}
    for mode in modes:
        query = QUERIES[2 * RETRIEVAL_MODES.index(mode) + i % 2] + f" (run {i})"
        if mode == "floor":
            site.switch()
            times[mode], _vector, _found = common.floor_search(site.bank, query, 5)
        elif mode == "retrieve, kept connection":
            times[mode] = kept.retrieve(site.secret, query, 5)
        else:
            times[mode] = new_connection_retrieve(site, query, 5)
    return {mode: times[mode] for mode in RETRIEVAL_MODES}


def new_connection_retrieve(site: Site, query: str, k: int) -> float:
    """ms for one ``POST /api/v1/retrieve`` of ``k`` items over a connection opened for it, its answer asserted
    to serve all ``k``."""
    body = json.dumps({"query": query, "k": k}).encode()
    headers = {"Authorization": f"Bearer {site.secret}", "Content-Type": "application/json"}
    conn = http.client.HTTPConnection(site.host, site.port, timeout=60)
    started = time.perf_counter()
    conn.request("POST", "/api/v1/retrieve", body=body, headers=headers)
    response = conn.getresponse()
    answer = response.read()
    elapsed = (time.perf_counter() - started) * 1000
    conn.close()
    assert response.status == 200 and len(json.loads(answer)["items"]) == k, answer[:300]
    return elapsed


def ingest(site: Site, run: int, size: int = 50) -> float:
    """ms for ``POST /api/v1/trajectories/batch`` of ``size`` trajectories, each asserted stored."""
    items = [
        {
            "task": f"Task ingested {run}-{i}: {scale_seed.TOPICS[i % len(scale_seed.TOPICS)]}",
            "steps": [{k: v for k, v in step.items() if k != "index"} for step in scale_seed.steps_for(i)],
            "final_answer": "Done.",
            "outcome": "success",
        }
        for i in range(size)
    ]
    body = json.dumps({"trajectories": items}).encode()
    headers = {"Authorization": f"Bearer {site.secret}", "Content-Type": "application/json"}
    conn = http.client.HTTPConnection(site.host, site.port, timeout=120)
    started = time.perf_counter()
    conn.request("POST", "/api/v1/trajectories/batch", body=body, headers=headers)
    response = conn.getresponse()
    answer = response.read()
    elapsed = (time.perf_counter() - started) * 1000
    conn.close()
    assert response.status == 200, answer[:300]
    assert json.loads(answer)["accepted"] == size, answer[:300]  # every one stored
    return elapsed


def purge(site: Site) -> dict[str, float]:
    """The retention purge of the oldest RETENTION_SHARE of the bank (put back after): ms per row, and which
    indexes of the trajectory and raw record tables grew."""
    from django.db import connection

    from accounts.models import Bank
    from trajectories.records.retention import trajectory_steps_purge_expired

    site.switch()
    days = int(scale_seed.DAYS * (1 - RETENTION_SHARE))
    tables = ("trajectories_trajectory", "trajectories_rawrecord")
    sizes_sql = (
        "SELECT indexrelid::regclass::text, pg_relation_size(indexrelid) FROM pg_index"
        " WHERE indrelid = ANY(%s::regclass[])"
    )
    with connection.cursor() as cur:
        cur.execute(f"DROP TABLE IF EXISTS {PURGE_TABLE}")
        cur.execute(
            f"CREATE TABLE {PURGE_TABLE} AS SELECT * FROM trajectories_rawrecord WHERE bank_id = %s"
            " AND created_at < now() - make_interval(days => %s)",
            [site.bank.pk, days],
        )
        # Rebuilt first, so the purge meets the indexes as a range's first purge would (pages as full as the
        # inserts left them), not with the room an earlier round's purge and put-back left in them.
        for table in tables:
            cur.execute(f"REINDEX TABLE {table}")
        cur.execute(sizes_sql, [list(tables)])
        before = dict(cur.fetchall())
    Bank.objects.filter(pk=site.bank.pk).update(step_retention_days=days)
    try:
        started = time.perf_counter()
        purged = trajectory_steps_purge_expired()
        seconds = time.perf_counter() - started
    finally:
        Bank.objects.filter(pk=site.bank.pk).update(step_retention_days=None)
    rows = purged.get(site.bank.pk, 0)
    with connection.cursor() as cur:
        cur.execute(f"SELECT count(*) FROM {PURGE_TABLE}")
        (expected,) = cur.fetchone()
        cur.execute(sizes_sql, [list(tables)])
        after = dict(cur.fetchall())
        # Put the purged records back (and forget the run), so the next round (and run) purges the same rows.
        cur.execute(
            "INSERT INTO trajectories_rawrecord (trajectory_id, bank_id, created_at, steps, final_answer)"
            f" SELECT trajectory_id, bank_id, created_at, steps, final_answer FROM {PURGE_TABLE}"
            " ON CONFLICT (trajectory_id) DO NOTHING"
        )
        cur.execute("DELETE FROM trajectories_retentionrun WHERE bank_id = %s", [site.bank.pk])
        cur.execute(f"DROP TABLE {PURGE_TABLE}")
        for table in tables:
            cur.execute(f"VACUUM {table}")  # as autovacuum would before the next purge: the old versions' space reused
    assert rows > 0 and rows <= expected, (rows, expected)  # the pipeline's unfinished ones are kept
    grown = sorted(name for name, size in after.items() if size > before.get(name, 0))
    return {"purge ms per row": seconds * 1000 / rows, "rows": rows, "grown": grown}


def worker_computations(site: Site, runs: int = 3) -> dict[str, float]:
    """ms (median of ``runs``) of what a worker does for each page's kept figures (beat's refresh, or the
    computation a view queued when none were kept), in this process: the dashboard's report, the reviewers
    page's figures (its first period) and Impact's all-time per-item table. Each run starts with nothing kept
    and is asserted to have stored non-empty figures."""
    from django.core.cache import cache
    from django.utils import timezone

    from trajectories.dashboard import report, reviewer_report
    from trajectories.dashboard.reviewers import PERIODS
    from trajectories.impact import item_tables
    from trajectories.impact.report import bank_impact

    site.switch()
    bank_id, days, zone = site.bank.pk, PERIODS[0], str(timezone.get_current_timezone())
    item_key = item_tables._key(bank_id, None, bank_impact(bank=site.bank), item_tables.PAGE_ITEMS)
    computations = {
        DASHBOARD_REPORT: (report._key(bank_id), lambda: report.report_compute(bank_id=bank_id)),
        REVIEWERS_REPORT: (
            reviewer_report._key(bank_id, days, zone),
            lambda: reviewer_report.reviewer_compute(bank_id=bank_id, days=days, zone=zone),
        ),
        ITEM_TABLE: (
            item_key,
            lambda: item_tables.item_table_compute(bank_id=bank_id, since=None, limit=item_tables.PAGE_ITEMS),
        ),
    }
    medians = {}
    for what, (key, compute) in computations.items():
        times = []
        for _ in range(runs):
            cache.delete(key)
            started = time.perf_counter()
            computed = compute()
            times.append((time.perf_counter() - started) * 1000)
            kept = cache.get(key)
            assert computed and kept is not None, (site.n, what, "nothing computed")
            if what == ITEM_TABLE:
                assert kept["outcomes"], (site.n, what, "an empty table")
            elif what == DASHBOARD_REPORT:
                assert kept.approved > 0 and kept.charts, (site.n, what, "an empty report")
            else:
                assert kept.rows, (site.n, what, "no reviewer")
        medians[what] = statistics.median(times)
    return medians


def table_weights(n: int) -> list[tuple[str, float, float]]:
    """(table, MB of the table with its indexes, MB of its indexes), per 100k trajectories."""
    from django.db import connection

    per = n / 100_000
    out = []
    with connection.cursor() as cur:
        for table in scale_seed_tables():
            cur.execute("SELECT pg_total_relation_size(%s::regclass), pg_indexes_size(%s::regclass)", [table, table])
            total, indexes = cur.fetchone()
            out.append((table, total / 2**20 / per, indexes / 2**20 / per))
    return out


def scale_seed_tables():
    from scale import BIG_TABLES

    return BIG_TABLES


def _stats(values: list[float]) -> tuple[float, float]:
    return statistics.median(values), common.pct(values, 95)


def measure(sizes: list[int], runs: int, seeded: dict, use_db, whole_exports: bool = False, hnsw: bool = True) -> dict:
    """Every measurement at both sizes, interleaved; prints the table; returns the figures."""
    from scale import PAGE_BAR, PURGE_BAR, RETRIEVAL_BAR

    small, large = sizes
    sites = {}
    try:
        for n in sizes:
            sites[n] = Site(n, use_db)
        kept = {n: common.KeptConnection(sites[n].base) for n in sizes}
        times: dict[str, dict[int, list[float]]] = defaultdict(lambda: defaultdict(list))
        checks = {n: pages(sites[n]) for n in sizes}
        for n in sizes:  # warm each server's model and caches
            for what, path, options, check in checks[n]:
                _ms, body = sites[n].get(path, **options)
                assert check(body), (n, what, "the page does not show the bank's figures")
            retrieval(sites[n], kept[n], 0)
        for run in range(runs):
            for n in sizes:
                for what, path, options, check in checks[n]:
                    ms, body = sites[n].get(path, **options)
                    assert check(body), (n, what)
                    times[what][n].append(ms)
                for what, path in exports(sites[n]):
                    ms, _ = sites[n].get(path, first_byte=True)
                    times[f"{what}, first byte"][n].append(ms)
                for what, ms in retrieval(sites[n], kept[n], run + 1).items():
                    times[what][n].append(ms)
                times["batch ingest, 50 trajectories"][n].append(ingest(sites[n], run))
        once: dict[str, dict[int, object]] = defaultdict(dict)
        for n in sizes if whole_exports else ():
            for what, path in exports(sites[n]):
                ms, body = sites[n].get(path)
                assert body.count(b"\n") > 0, (what, "empty export")
                once[f"{what}, whole"][n] = ms
        purges: dict[int, list[dict]] = {n: [] for n in sizes}
        for _ in range(PURGE_ROUNDS):  # interleaved, as the pages: one purge per size is one noisy sample
            for n in sizes:
                purges[n].append(purge(sites[n]))
        for n in sizes:
            once["retention purge, ms per row"][n] = statistics.median(r["purge ms per row"] for r in purges[n])
            once["retention purge, rows"][n] = purges[n][0]["rows"]
            grown = sorted({name for r in purges[n] for name in r["grown"]})
            once["indexes grown by the purge"][n] = ", ".join(grown) or "none"
        for n in sizes:
            for what, ms in worker_computations(sites[n]).items():
                once[what][n] = ms
        for n in sizes:
            sites[n].switch()
            if hnsw:
                once["HNSW build, s"][n] = scale_seed.hnsw_build()
            once["backup (pg_dump), s"][n] = backup_seconds()
            once["weights"][n] = table_weights(n)
    finally:
        for site in sites.values():
            site.stop()
    return report(small, large, times, once, seeded, PAGE_BAR, RETRIEVAL_BAR, PURGE_BAR)


def backup_seconds() -> float:
    import tempfile
    from pathlib import Path

    from reasoningbank_site.backup import database_backup

    with tempfile.TemporaryDirectory() as tmp:
        started = time.perf_counter()
        path = database_backup(path=Path(tmp) / "bank.dump")
        seconds = time.perf_counter() - started
        assert Path(path).stat().st_size > 0
    return seconds


def report(small, large, times, once, seeded, page_bar, retrieval_bar, purge_bar) -> dict:
    rows = []
    print(f"\n## A bank at {small:,} and {large:,} trajectories ({common.load_note()})\n")
    print(f"| what | {small:,} p50 (p95) ms | {large:,} p50 (p95) ms | ratio | bar | pass |")
    print("|---|---:|---:|---:|---|---|")
    floor_large = statistics.median(times["floor"][large])
    for what, by_size in times.items():
        s50, s95 = _stats(by_size[small])
        l50, l95 = _stats(by_size[large])
        if what.startswith("retrieve"):
            ratio, bar = l50 / floor_large, f"≤ {retrieval_bar}× the floor at {large:,}"
            ok = ratio <= retrieval_bar
        elif what == "floor":
            ratio, bar, ok = l50 / s50, "", None
        else:
            ratio, bar = l50 / s50, f"≤ {page_bar}×"
            ok = ratio <= page_bar
        verdict = "" if ok is None else ("pass" if ok else "FAIL")
        rows.append({"what": what, small: s50, large: l50, "ratio": ratio, "pass": ok})
        print(f"| {what} | {s50:.0f} ({s95:.0f}) | {l50:.0f} ({l95:.0f}) | {ratio:.2f} | {bar} | {verdict} |")
    for what in [w for w in once if w.endswith(", whole")]:
        s, lg = once[what][small], once[what][large]
        print(f"| {what} | {s:.0f} | {lg:.0f} | {lg / s:.2f} | (size-bound) | |")
    s, lg = once["retention purge, ms per row"][small], once["retention purge, ms per row"][large]
    ok = lg / s <= purge_bar
    rows.append({"what": "purge", small: s, large: lg, "ratio": lg / s, "pass": ok})
    print(
        f"| retention purge, ms per row, median of {PURGE_ROUNDS} ({once['retention purge, rows'][small]:,} vs "
        f"{once['retention purge, rows'][large]:,} rows) | {s:.3f} | {lg:.3f} | {lg / s:.2f} | ≤ {purge_bar}× |"
        f" {'pass' if ok else 'FAIL'} |"
    )
    grown = once["indexes grown by the purge"]
    no_growth = grown[small] == "none" and grown[large] == "none"
    print(
        f"| indexes grown by the purge | {grown[small]} | {grown[large]} | | none | {'pass' if no_growth else 'FAIL'} |"
    )
    for what in WORKER_ROWS:  # informational: a worker's, at most once a minute per watched bank (and window)
        if what in once:
            s, lg = once[what][small], once[what][large]
            print(f"| {what}, ms (median of 3) | {s:.0f} | {lg:.0f} | {lg / s:.2f} | (a worker's) | |")
    for what in ("HNSW build, s", "backup (pg_dump), s"):
        if what not in once:
            continue
        s, lg = once[what][small], once[what][large]
        print(f"| {what} | {s:.1f} | {lg:.1f} | {lg / s:.2f} | (size-bound) | |")
    print(f"\nSeeding (s): {small:,}: {sum(seeded[small].values()):.0f}; {large:,}: {sum(seeded[large].values()):.0f}")
    print(f"\n| table (per 100k trajectories) | MB at {small:,} | of it indexes | MB at {large:,} | of it indexes |")
    print("|---|---:|---:|---:|---:|")
    for (table, st, si), (_t, lt, li) in zip(once["weights"][small], once["weights"][large], strict=True):
        print(f"| {table} | {st:.0f} | {si:.0f} | {lt:.0f} | {li:.0f} |")
    return {"rows": rows, "once": dict(once)}
