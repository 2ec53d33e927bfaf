"""The dashboard's reads at two bank sizes.

Fills a separate database ``rb_bench_dashboard`` (on the app's PostgreSQL server) with two banks, ``dash-small``
and ``dash-large`` (``--small`` and ``--large`` trajectories, spread over 365 days, kept between runs): every
trajectory has an LLM judgment, 1 % of them a human one too (half of those disagreeing), with proposed and
approved items beside them. Then times every function the dashboard calls, the whole page and its 5-second
refresh, per bank, and prints the ratio large / small: a read that stays flat as the bank grows has a ratio
near 1.

    RB_DATA_DIR=/tmp/rb-data-bench .venv/bin/python bench/dashboard.py [--small 20000] [--large 200000] [--runs 5]
    ... bench/dashboard.py --explain judge_human_agreement   # the EXPLAIN ANALYZE of one function's queries
    ... bench/dashboard.py --trigger-cost   # 10k trajectories and 10k items written with and without the count triggers
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

os.environ.setdefault("RB_BENCH_DB", "rb_bench_dashboard")
from common import setup_django

DAYS = 365


def seed(slug: str, n: int):
    """The bank ``slug`` with ``n`` trajectories (SQL inserts, so a million takes minutes, not hours)."""
    from django.contrib.auth import get_user_model
    from django.db import connection

    from accounts.models import Bank
    from accounts.teams.banks import bank_create
    from accounts.teams.services import team_create
    from trajectories.models import Trajectory

    User = get_user_model()
    user = User.objects.filter(username="bench").first() or User.objects.create_user("bench", password="bench-pass-123")
    bank = Bank.objects.filter(slug=slug).first()
    if bank is None:
        bank = bank_create(team=team_create(name=slug, slug=slug, owner=user), name=slug, slug=slug)
    have = Trajectory.objects.filter(bank=bank).count()
    if have >= n:
        return user, bank
    t0 = time.perf_counter()
    statuses = "ARRAY['done','done','done','done','done','done','awaiting_llm','needs_attention','judged','distilling']"
    with connection.cursor() as cur:
        cur.execute(
            f"""
            INSERT INTO trajectories_trajectory (public_id, bank_id, task, task_id, step_count, input_format,
                agent, metadata, outcome, learn, group_id, status, status_detail, verdict, verdict_tier,
                judge_attempts, distill_attempts, contrast_attempts, created_at, updated_at)
            SELECT gen_random_uuid(), %s, 'Task ' || i || ': book the cheapest trip number ' || i, '',
                1, 'steps', 'agent-' || (i %% 8), '{{}}'::jsonb, (ARRAY['success','failure',''])[1 + i %% 3], true, '',
                ({statuses})[1 + i %% 10], '', (ARRAY['success','failure'])[1 + i %% 2], 1, 0, 0, 0, at, at
            FROM (SELECT i, now() - make_interval(secs => (%s - i) * %s) AS at
                  FROM generate_series(%s, %s - 1) AS i) s
            """,
            [bank.pk, n, DAYS * 86400.0 / n, have, n],
        )
        # Their raw records (trajectories.records.models.RawRecord): one each, as ingest writes them.
        cur.execute(
            """
            INSERT INTO trajectories_rawrecord (trajectory_id, bank_id, created_at, steps, final_answer)
            SELECT t.id, t.bank_id, t.created_at, '[{"index": 0, "kind": "answer", "content": "Flight X."}]'::jsonb,
                'answer ' || t.id
            FROM trajectories_trajectory t
            WHERE t.bank_id = %s AND NOT EXISTS (SELECT 1 FROM trajectories_rawrecord r WHERE r.trajectory_id = t.id)
            """,
            [bank.pk],
        )
        # Every trajectory an LLM judgment (two prompt versions over the year), 1 % a human one (half disagreeing).
        cur.execute(
            """
            INSERT INTO trajectories_judgment (public_id, trajectory_id, source, label, rationale, model, prompt_version,
                created_at)
            SELECT gen_random_uuid(), t.id, 'llm', t.verdict, 'because', 'm',
                CASE WHEN t.created_at < now() - interval '120 days' THEN 'judge/v1' ELSE 'judge/v2' END,
                t.created_at + interval '1 minute'
            FROM trajectories_trajectory t
            WHERE t.bank_id = %s AND NOT EXISTS (SELECT 1 FROM trajectories_judgment j WHERE j.trajectory_id = t.id)
            """,
            [bank.pk],
        )
        cur.execute(
            """
            INSERT INTO trajectories_judgment (public_id, trajectory_id, source, label, rationale, model, prompt_version,
                author_id, created_at)
            SELECT gen_random_uuid(), t.id, 'human',
                CASE WHEN t.id %% 2 = 0 THEN t.verdict WHEN t.verdict = 'success' THEN 'failure' ELSE 'success' END,
                '', '', '', %s, t.created_at + interval '1 hour'
            FROM trajectories_trajectory t
            WHERE t.bank_id = %s AND t.id %% 100 = 0
            """,
            [user.pk, bank.pk],
        )
        cur.execute("ANALYZE")
    print(f"seeded {slug} ({n:,}) in {time.perf_counter() - t0:.1f}s", file=sys.stderr)
    return user, bank


def functions():
    from memories.releases.selectors import bank_releasing
    from trajectories.dashboard import selectors
    from trajectories.dashboard.charts import dashboard_charts
    from trajectories.dashboard.llm_usage import bank_llm_usage
    from trajectories.judging.evidence import disagreement_count

    return {
        "status_counts": selectors.status_counts,
        "review_backlog": selectors.review_backlog,
        "disagreement_count": disagreement_count,
        "judge_human_agreement": selectors.judge_human_agreement,
        "judge_agreement_by_version": selectors.judge_agreement_by_version,
        "distill_outcomes_by_version": selectors.distill_outcomes_by_version,
        "recent_activity": selectors.recent_activity,
        "dashboard_charts": dashboard_charts,
        "bank_llm_usage": bank_llm_usage,
        "bank_releasing": bank_releasing,
    }


def timed(call, runs: int) -> tuple[float, int]:
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    call()  # warm
    times = []
    for _ in range(runs):
        with CaptureQueriesContext(connection) as queries:
            started = time.perf_counter()
            call()
            times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times), len(queries)


def explain(name: str, bank) -> None:
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    with CaptureQueriesContext(connection) as queries:
        functions()[name](bank=bank)
    with connection.cursor() as cur:
        for q in queries.captured_queries:
            cur.execute("EXPLAIN (ANALYZE, BUFFERS) " + q["sql"])
            print(q["sql"][:300], "\n", "\n".join(r[0] for r in cur.fetchall()), "\n")


def _trajectory_steps(bank, n: int) -> dict:
    insert = """
        INSERT INTO trajectories_trajectory (public_id, bank_id, task, task_id, step_count, input_format,
            agent, metadata, outcome, learn, group_id, status, status_detail, verdict, verdict_tier,
            judge_attempts, distill_attempts, contrast_attempts, created_at, updated_at)
        SELECT gen_random_uuid(), %s, 'cost ' || i, '', 1, 'steps', 'a', '{}'::jsonb, '', true, '',
            'received', '', '', 0, 0, 0, 0, now() - make_interval(mins => i), now() FROM generate_series(1, %s) AS i"""
    return {
        "bulk insert": lambda cur, _: cur.execute(insert, [bank.pk, n]),
        "bulk status update": lambda cur, _: cur.execute(
            "UPDATE trajectories_trajectory SET status = 'judging' WHERE bank_id = %s AND task LIKE 'cost %%'",
            [bank.pk],
        ),
        "500 single inserts": lambda cur, _: [cur.execute(insert, [bank.pk, 1]) for _ in range(500)],
        "bulk delete": lambda cur, _: cur.execute(
            "DELETE FROM trajectories_trajectory WHERE bank_id = %s AND task LIKE 'cost %%'", [bank.pk]
        ),
    }


def _item_steps(bank, n: int) -> dict:
    """Items are written past the table's last id, so single-row writes find theirs by primary key."""
    insert = """
        INSERT INTO memories_memoryitem (public_id, bank_id, title, description, content, status, origin,
            source_task_id, cited_steps, model, prompt_version, verdict_label, near_duplicates,
            needs_review_reason, status_reason, embedding_hash, embedding_model, served_count, created_at,
            updated_at, source_agents, source_metadata, tags)
        SELECT gen_random_uuid(), %s, 'cost ' || i, 'd', 'c', 'proposed', 'manual', '', '[]', '', '', '', '[]',
            '', '', '', '', 0, now(), now(), '{}', '[]', '{}' FROM generate_series(1, %s) AS i"""

    def bulk_insert(cur, state) -> None:
        cur.execute("SELECT COALESCE(MAX(id), 0) FROM memories_memoryitem")
        (state["after"],) = cur.fetchone()
        cur.execute(insert, [bank.pk, n])

    def each(sql: str):
        return lambda cur, state: [cur.execute(sql, [state["after"] + k]) for k in range(1, 501)]

    mine = "bank_id = %s AND id > %s"
    return {
        "bulk insert": bulk_insert,
        "bulk approval (status update)": lambda cur, state: cur.execute(
            f"UPDATE memories_memoryitem SET status = 'approved' WHERE {mine}", [bank.pk, state["after"]]
        ),
        "500 single flags (a key moved)": each(
            "UPDATE memories_memoryitem SET needs_review_reason = 'x' WHERE id = %s"
        ),
        "500 single edits (no key moved)": each("UPDATE memories_memoryitem SET title = title || '.' WHERE id = %s"),
        "bulk delete": lambda cur, state: cur.execute(
            f"DELETE FROM memories_memoryitem WHERE {mine}", [bank.pk, state["after"]]
        ),
    }


def trigger_cost(bank, n: int = 10_000, runs: int = 3) -> None:
    """The maintained counts' triggers (reasoningbank_site.delta_counts) on the write paths of the two counted
    tables: trajectories (a bulk INSERT of ``n``, one UPDATE moving their status, 500 single-row INSERTs, a bulk
    DELETE) and items (a bulk INSERT of ``n``, their approval in one UPDATE, 500 single-row flags and 500 edits
    that move no key, a bulk DELETE), each with the triggers and without (DISABLE TRIGGER USER), in a
    transaction rolled back."""
    from django.db import connection, transaction

    for table, steps in (
        ("trajectories_trajectory", _trajectory_steps(bank, n)),
        ("memories_memoryitem", _item_steps(bank, n)),
    ):
        times = {(name, on): [] for name in steps for on in (False, True)}
        for _ in range(runs):
            for on in (False, True):
                state: dict = {}
                with transaction.atomic(), connection.cursor() as cur:
                    if not on:
                        cur.execute(f"ALTER TABLE {table} DISABLE TRIGGER USER")
                    for name, step in steps.items():
                        started = time.perf_counter()
                        step(cur, state)
                        times[name, on].append((time.perf_counter() - started) * 1000)
                    transaction.set_rollback(True)
        print(f"\n| {table}: write ({n:,} rows) | ms without triggers | ms with | ratio |\n|---|---:|---:|---:|")
        for name in steps:
            off, on = statistics.median(times[name, False]), statistics.median(times[name, True])
            print(f"| {name} | {off:.0f} | {on:.0f} | {on / off:.2f}x |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--small", type=int, default=20_000)
    parser.add_argument("--large", type=int, default=200_000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--explain", default="", help="print the EXPLAIN ANALYZE of this function's queries")
    parser.add_argument("--trigger-cost", action="store_true", help="time writes with and without the count triggers")
    args = parser.parse_args()
    setup_django()
    from django.test import Client

    banks = [seed("dash-small", args.small), seed("dash-large", args.large)]
    if args.trigger_cost:
        trigger_cost(banks[1][1])
        return
    if args.explain:
        for _, bank in banks:
            print(f"== {bank.slug}")
            explain(args.explain, bank)
        return
    rows = []
    for name, f in functions().items():
        rows.append((name, [timed(lambda f=f, b=bank: f(bank=b), args.runs) for _, bank in banks]))
    for label, htmx in (("whole page", False), ("5-second refresh", True)):
        out = []
        for user, bank in banks:
            client = Client()
            client.force_login(user)
            headers = {"HTTP_HX_REQUEST": "true", "HTTP_HX_TARGET": "live"} if htmx else {}
            url = f"/banks/{bank.public_id}/"

            def get(client=client, url=url, headers=headers):
                assert client.get(url, **headers).status_code == 200

            out.append(timed(get, args.runs))
        rows.append((label, out))
    print(f"{args.small:,} vs {args.large:,} trajectories in one bank; median of {args.runs} runs\n")
    print(f"| read | ms at {args.small:,} | ms at {args.large:,} | ratio | queries |\n|---|---:|---:|---:|---:|")
    for name, ((small, qs), (large, ql)) in rows:
        print(f"| {name} | {small:.1f} | {large:.1f} | {large / small:.1f}x | {qs} / {ql} |")


if __name__ == "__main__":
    main()
