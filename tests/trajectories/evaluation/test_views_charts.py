"""The evaluation run's charts, drawn on the server: per-task paired outcomes (a dot per task, with the
diagonal), pass^k by k (a line per arm), cost against success (a point per arm) and the history of
evaluations across releases; each with a title, a description and its numbers as a table."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from tests.trajectories.evaluation.pages_data import finished_run, make_release, make_run, make_task_set
from trajectories.evaluation.charts import cost_chart, history_chart, history_runs, paired_chart, pass_k_chart
from trajectories.evaluation.models import EvalRun, RunState

pytestmark = pytest.mark.django_db


@pytest.fixture
def finished(bank):
    releases = {"candidate": make_release(bank, 2), "production": make_release(bank, 1)}
    return finished_run(bank, make_task_set(bank, tasks=30), releases=releases)


def _figure(html: str, chart_id: str) -> str:
    match = re.search(rf'<figure class="chart[^"]*" id="{chart_id}">(.*?)</figure>', html, re.S)
    assert match, f"no figure {chart_id}"
    return match.group(1)


def _page(client, owner, run) -> str:
    client.force_login(owner)
    url = reverse(
        "trajectories:evaluation_detail", kwargs={"bank_id": run.bank.public_id, "evaluation_id": run.public_id}
    )
    return client.get(url).content.decode()


def test_the_paired_chart_draws_one_dot_per_task_and_the_diagonal(client, owner, finished):
    run, outcomes = finished
    html = _page(client, owner, run)
    for versus in ("production", "none", "control"):
        figure = _figure(html, f"chart-paired-{versus}")
        assert figure.count('<circle class="point') == 30
        assert figure.count('class="chart-diagonal"') == 1
        above = sum(sum(outcomes["candidate"][k]) > sum(outcomes[versus][k]) for k in outcomes["candidate"])
        below = sum(sum(outcomes["candidate"][k]) < sum(outcomes[versus][k]) for k in outcomes["candidate"])
        assert f"30 tasks with known outcomes in both arms: {above} above the diagonal" in figure
        assert f"{below} below, {30 - above - below} on it" in figure
        assert figure.count('<tr><th scope="row">task-') == 30  # the table alternative
        assert "<title" in figure and "<desc" in figure


def test_tasks_that_share_a_point_are_still_one_visible_dot_each_inside_the_chart(finished):
    run, _ = finished
    chart = paired_chart(run.results, arm="candidate", versus="production")
    places = [(d.x, d.y) for d in chart.dots]
    assert len(places) == len(set(places)) == 30
    for d in chart.dots:
        assert d.r > 1 and d.r <= d.x <= chart.width - d.r and d.r <= d.y <= chart.height - d.r


def test_fifty_tasks_on_one_point_stay_inside_the_plot():
    results = {
        "per_task": [
            {
                "key": f"t{i}",
                "arms": {"candidate": {"successes": 3, "known": 3}, "production": {"successes": 3, "known": 3}},
            }
            for i in range(50)
        ]
    }
    chart = paired_chart(results, arm="candidate", versus="production")
    assert len({(d.x, d.y) for d in chart.dots}) == 50
    assert all(0 < d.x < chart.width and 0 < d.y < chart.height for d in chart.dots)
    assert "50 tasks with known outcomes in both arms: 0 above the diagonal" in chart.desc


def test_a_task_without_a_known_outcome_in_one_arm_is_left_out_of_its_pair(finished):
    run, _ = finished
    results = dict(run.results)
    results["per_task"] = [dict(t) for t in results["per_task"]]
    results["per_task"][0] = {
        **results["per_task"][0],
        "arms": {**results["per_task"][0]["arms"], "production": {"successes": 0, "known": 0}},
    }
    assert len(paired_chart(results, arm="candidate", versus="production").dots) == 29
    assert len(paired_chart(results, arm="candidate", versus="none").dots) == 30


def test_pass_k_is_one_line_per_arm_over_k_from_one_to_k(client, owner, finished):
    run, _ = finished
    chart = pass_k_chart(run.results)
    assert [t.label for t in chart.x_ticks] == ["1", "2", "3"]
    assert [css for css, _ in chart.lines] == ["arm-candidate", "arm-production", "arm-none", "arm-control"]
    candidate = run.results["arms"]["candidate"]["pass_hat_k"]
    assert [row[1][0] for row in chart.rows] == [f"{candidate[str(n)] * 100:.0f}%" for n in (1, 2, 3)]
    figure = _figure(_page(client, owner, run), "chart-pass-k")
    assert figure.count('<path class="line arm-') == 4


def test_cost_against_success_is_one_labelled_point_per_arm_and_an_arm_without_tokens_is_in_the_table_only(finished):
    run, _ = finished
    results = {
        **run.results,
        "arms": {**run.results["arms"], "none": {**run.results["arms"]["none"], "tokens_per_try": None}},
    }
    chart = cost_chart(results)
    assert sorted(d.label for d in chart.dots) == ["candidate release", "production", "same-budget control"]
    assert [row[0] for row in chart.rows] == ["Candidate release", "Production", "No memory", "Same-budget control"]
    assert chart.rows[2][1] == "not reported"
    assert "1 arm without reported tokens or outcomes is only in the table" in chart.desc
    # More tokens is further right, a higher success rate higher up.
    by = {d.label: d for d in chart.dots}
    assert by["candidate release"].x > by["production"].x
    assert by["candidate release"].y < by["production"].y


def test_the_history_shows_the_banks_finished_runs_by_candidate_release_oldest_first(client, owner, bank, other_bank):
    task_set = make_task_set(bank)
    production = make_release(bank, 1)
    for number, days_ago in ((2, 5), (3, 1)):
        run, _ = finished_run(
            bank, task_set, releases={"candidate": make_release(bank, number), "production": production}
        )
        EvalRun.objects.filter(pk=run.pk).update(created_at=timezone.now() - timedelta(days=days_ago))
    make_run(bank, task_set, state=RunState.OPEN)  # not finished: not in the history
    finished_run(bank, task_set, kinds=("production", "none"))  # no candidate: not in the history
    finished_run(other_bank, make_task_set(other_bank), releases={"candidate": make_release(other_bank, 9)})
    runs = history_runs(bank=bank)
    chart = history_chart(runs=runs)
    assert chart.x_labels == ["#2", "#3"]
    assert [s.name for s in chart.series] == ["Candidate", "Production"]
    assert all(p.value is not None for s in chart.series for p in s.points)
    html = _page(client, owner, runs[-1])
    figure = _figure(html, "chart-history")
    assert "#2" in figure and "#3" in figure and "#9" not in figure


def test_a_run_without_results_draws_no_chart_but_says_why(client, owner, bank):
    run = make_run(bank, make_task_set(bank), kinds=("none", "control"), state=RunState.OPEN)
    html = _page(client, owner, run)
    assert "<svg" not in html.split('id="evaluation-live"')[1]
    assert 'id="evaluation-no-results"' in html or "data-chart-empty" in html
