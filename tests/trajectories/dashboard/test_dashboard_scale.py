"""The dashboard at scale: its judge-agreement reads start from the human judgments (a partial index, a few %
of the rows) and probe the LLM's latest by index, never reading every trajectory or judgment (EXPLAIN on a
seeded, ANALYZEd bank); the figures equal a count from the seed; and the 5-second refresh's and the whole
page's query counts do not grow with the bank."""

from __future__ import annotations

import re

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from memories.items.models import ItemStatus
from tests import factories
from trajectories.dashboard.bank_work import trajectory_work
from trajectories.dashboard.charts import dashboard_charts
from trajectories.dashboard.report import agreement_figures
from trajectories.dashboard.selectors import (
    agreement_by_week,
    distill_outcomes_by_version,
    judge_agreement_by_version,
    judge_human_agreement,
    recent_activity,
)
from trajectories.judging.evidence import disagreement_count
from trajectories.models import Judgment, Trajectory

pytestmark = pytest.mark.django_db

HTMX = {"HTTP_HX_REQUEST": "true", "HTTP_HX_TARGET": "live"}


def seed(bank, user, n: int, start: int = 0) -> None:
    """``n`` trajectories of ``bank`` over the last 60 days, each with an LLM judgment; every 50th also a
    human one (every other of those disagreeing with the LLM), then ANALYZE."""
    with connection.cursor() as cur:
        # A database migrated to before the raw record had its own table (the counts' migration test) holds
        # the steps and final answer on the trajectory row.
        cur.execute("SELECT to_regclass('trajectories_rawrecord') IS NULL")
        (inline,) = cur.fetchone()
        raw_columns, raw_values = (" steps, final_answer,", " '[]'::jsonb, '',") if inline else ("", "")
        cur.execute(
            f"""
            INSERT INTO trajectories_trajectory (public_id, bank_id, task, task_id,{raw_columns} step_count,
                input_format, agent, metadata, outcome, learn, group_id, status, status_detail, verdict, verdict_tier,
                judge_attempts, distill_attempts, contrast_attempts, created_at, updated_at)
            SELECT gen_random_uuid(), %s, 'task ' || i, '',{raw_values} 0, 'steps', 'a', '{{}}'::jsonb, '', true,
                '', 'done', '', (ARRAY['success','failure'])[1 + i %% 2], 1, 0, 0, 0,
                now() - make_interval(mins => i), now() - make_interval(mins => i)
            FROM generate_series(%s, %s - 1) AS i
            """,
            [bank.pk, start, start + n],
        )
        if not inline:
            cur.execute(
                "INSERT INTO trajectories_rawrecord (trajectory_id, bank_id, created_at, steps, final_answer)"
                " SELECT t.id, t.bank_id, t.created_at, '[]'::jsonb, '' FROM trajectories_trajectory t"
                " WHERE t.bank_id = %s AND NOT EXISTS (SELECT 1 FROM trajectories_rawrecord r WHERE r.trajectory_id = t.id)",
                [bank.pk],
            )
        cur.execute(
            """
            INSERT INTO trajectories_judgment (public_id, trajectory_id, source, label, rationale, model,
                prompt_version, created_at)
            SELECT gen_random_uuid(), t.id, 'llm', t.verdict, '', 'm', 'judge/v1', t.created_at
            FROM trajectories_trajectory t
            WHERE t.bank_id = %s AND NOT EXISTS (SELECT 1 FROM trajectories_judgment j WHERE j.trajectory_id = t.id)
            """,
            [bank.pk],
        )
        cur.execute(
            """
            INSERT INTO trajectories_judgment (public_id, trajectory_id, source, label, rationale, model,
                prompt_version, author_id, created_at)
            SELECT gen_random_uuid(), t.id, 'human',
                CASE WHEN (t.id / 50) %% 2 = 0 THEN t.verdict WHEN t.verdict = 'success' THEN 'failure'
                     ELSE 'success' END, '', '', '', %s, t.created_at + interval '1 second'
            FROM trajectories_trajectory t
            WHERE t.bank_id = %s AND t.id %% 50 = 0
              AND NOT EXISTS (SELECT 1 FROM trajectories_judgment j WHERE j.trajectory_id = t.id AND j.source = 'human')
            """,
            [user.pk, bank.pk],
        )
        cur.execute("ANALYZE trajectories_trajectory")
        cur.execute("ANALYZE trajectories_judgment")


def plans(call) -> list[str]:
    with CaptureQueriesContext(connection) as queries:
        call()
    out = []
    with connection.cursor() as cur:
        for q in queries.captured_queries:
            cur.execute("EXPLAIN " + q["sql"])
            out.append("\n".join(row[0] for row in cur.fetchall()))
    return out


def expected_agreement(bank) -> tuple[int, int]:
    """(both, agree) counted in Python from every row: the figure the fast read must equal."""
    both = agree = 0
    for t in Trajectory.objects.filter(bank=bank).prefetch_related("judgments"):
        latest = {}
        for j in sorted(t.judgments.all(), key=lambda j: (j.created_at, j.id)):
            latest[j.source] = j.label
        if "llm" in latest and "human" in latest:
            both += 1
            agree += latest["llm"] == latest["human"]
    return both, agree


def test_agreement_reads_probe_the_human_judgments_index_and_scan_no_judgments(bank, other_bank, owner):
    seed(bank, owner, 4000)
    seed(other_bank, owner, 4000, start=4000)
    for call in (
        lambda: judge_human_agreement(bank=bank),
        lambda: judge_agreement_by_version(bank=bank),
        lambda: agreement_by_week(bank=bank),
        lambda: agreement_figures(bank=bank),
    ):
        (plan,) = plans(call)
        assert "judgment_human_latest" in plan, plan
        assert "Seq Scan on trajectories_judgment" not in plan, plan
        assert "Seq Scan on trajectories_trajectory" not in plan, plan
        assert "trajectories_trajectory_bank_id" not in plan, plan  # never the bank's every trajectory


def test_recent_activity_reads_the_latest_judgments_by_index(bank, other_bank, owner):
    seed(bank, owner, 4000)
    seed(other_bank, owner, 4000, start=4000)
    judgments = [p for p in plans(lambda: recent_activity(bank=bank)) if "trajectories_judgment" in p]
    assert judgments and "judgment_created" in judgments[0], judgments
    assert "Seq Scan on trajectories_judgment" not in judgments[0], judgments[0]


def test_agreement_figures_equal_a_count_of_every_row(bank, other_bank, owner):
    seed(bank, owner, 600)
    seed(other_bank, owner, 300, start=600)
    # A reviewer who changed their mind: the latest human word counts, and the LLM's latest too.
    t = Trajectory.objects.filter(bank=bank).order_by("id")[5]
    Judgment.objects.create(trajectory=t, source="human", label="failure", author=owner)
    Judgment.objects.create(trajectory=t, source="human", label="success", author=owner)
    Judgment.objects.create(trajectory=t, source="llm", label="failure", prompt_version="judge/v2")
    both, agree = expected_agreement(bank)
    assert both > 10 and 0 < agree < both
    got = judge_human_agreement(bank=bank)
    assert (got.both, got.agree) == (both, agree)
    versions = {v.version: v for v in judge_agreement_by_version(bank=bank)}
    assert list(versions) == ["judge/v1", "judge/v2"]
    assert versions["judge/v2"].accuracy.n == 1 and versions["judge/v2"].accuracy.x == 0
    assert versions["judge/v1"].accuracy.n == both  # each reviewed trajectory has one v1 judgment
    assert sum(w.n for w in agreement_by_week(bank=bank)) == both + 1


def test_refresh_and_page_queries_do_not_grow_with_the_bank(client, bank, owner, django_assert_max_num_queries):
    client.force_login(owner)
    url = reverse("trajectories:dashboard", kwargs={"bank_id": bank.public_id})
    counts = {}
    for size in (100, 2000):
        seed(bank, owner, size - Trajectory.objects.filter(bank=bank).count(), start=size)
        # The page computes its report afresh at each size (``?fresh``: a kept one would read nothing).
        for name, path, headers in (("page", url + "?fresh=1", {}), ("refresh", url, HTMX)):
            with CaptureQueriesContext(connection) as queries:
                assert client.get(path, **headers).status_code == 200
            counts[name, size] = len(queries)
    assert counts["page", 100] == counts["page", 2000]
    assert counts["refresh", 100] == counts["refresh", 2000]
    # The refresh redraws the counts only: no agreement per version, distill outcomes, charts or usage.
    with django_assert_max_num_queries(11):
        live = client.get(url, **HTMX).content.decode()
    assert "agreement-by-version" not in live and "chart-review" not in live
    assert "agreement-by-version" in client.get(url).content.decode()
    assert dashboard_charts(bank=bank)


def test_disagreement_count_reads_only_the_disagreeing_rows_of_the_bank(bank, other_bank, owner):
    seed(bank, owner, 4000)
    seed(other_bank, owner, 4000, start=4000)
    # The agent reported an outcome on some; a few of those say the other than the verdict.
    Trajectory.objects.filter(id__in=Trajectory.objects.filter(bank=bank).order_by("id")[:300]).update(
        outcome="success"
    )
    with connection.cursor() as cur:
        cur.execute("ANALYZE trajectories_trajectory")
    expected = Trajectory.objects.filter(bank=bank, outcome="success", verdict="failure").count()
    assert expected > 0 and disagreement_count(bank=bank) == expected
    (plan,) = plans(lambda: disagreement_count(bank=bank))
    assert "trajectory_disagree" in plan, plan
    assert "Seq Scan on trajectories_trajectory" not in plan, plan


def test_home_page_work_counts_read_only_the_rows_that_count(bank, other_bank, owner):
    seed(bank, owner, 4000)
    seed(other_bank, owner, 4000, start=4000)
    mine = Trajectory.objects.filter(bank=bank).order_by("id")
    Trajectory.objects.filter(id__in=mine[:300]).update(outcome="success")
    Trajectory.objects.filter(id__in=mine[300:320]).update(status="awaiting_llm", verdict="")
    Trajectory.objects.filter(id__in=mine[320:327]).update(status="needs_attention")
    with connection.cursor() as cur:
        cur.execute("ANALYZE trajectories_trajectory")
    work = trajectory_work([bank, other_bank], owner)
    disagree = Trajectory.objects.filter(bank=bank, outcome="success", verdict="failure").count()
    assert [w.count for w in work[bank.pk]] == [disagree, 20, 7]
    assert [w.count for w in work[other_bank.pk]] == [0, 0, 0]
    (plan,) = plans(lambda: trajectory_work([bank, other_bank], owner))
    assert "trajectory_disagree" in plan, plan
    assert "Seq Scan on trajectories_trajectory" not in plan, plan


def test_distill_outcomes_read_the_distilled_items_index_not_every_item(bank, other_bank):
    """Items no distill prompt proposed (imported, written by hand) and other banks' items are not read."""
    factories.make_items(bank, 3000)
    factories.make_items(other_bank, 3000, prompt_version="distill/v1")
    factories.make_items(bank, 4, status=ItemStatus.PROPOSED, prompt_version="distill/v1")
    factories.make_items(bank, 3, status=ItemStatus.SUPERSEDED, prompt_version="distill/v1")
    with connection.cursor() as cur:
        cur.execute("ANALYZE memories_memoryitem")
    (plan,) = plans(lambda: distill_outcomes_by_version(bank=bank))
    assert "memoryitem_bank_distilled" in plan and not re.search(r"Seq Scan on memories_memoryitem\b", plan), plan
    ((version, items, pending),) = [(o.version, o.items, o.pending) for o in distill_outcomes_by_version(bank=bank)]
    assert (version, items, pending) == ("distill/v1", 4, 4)
