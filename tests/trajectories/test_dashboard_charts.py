"""The dashboard's charts: the per-day / per-week series from real
rows (items moved through the review services, trajectories and judgments
dated by updating their timestamps), the n/a rule for rates from too few
cases, the SVG the dashboard draws from them, the bounded query count, and
that no text reaches the SVG unescaped."""

from __future__ import annotations

import re
from datetime import datetime, time, timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from memories.items.models import MemoryItemVersion
from memories.review.decisions import memory_item_approve, memory_item_flag, memory_item_reject
from tests.factories import make_trajectory, propose_item, record_verdict
from trajectories.dashboard.charts import dashboard_charts
from trajectories.dashboard.selectors import agreement_by_week, review_by_day, success_by_week
from trajectories.models import JudgmentSource, Trajectory

pytestmark = pytest.mark.django_db


def at(days_ago: int, hour: int = 12):
    """Noon (local time) ``days_ago`` days before today."""
    day = timezone.localdate() - timedelta(days=days_ago)
    return timezone.make_aware(datetime.combine(day, time(hour)))


def dated(item, action: str, days_ago: int) -> None:
    MemoryItemVersion.objects.filter(item=item, action=action).update(created_at=at(days_ago))


def test_review_by_day_walks_the_backlog_back_from_todays_queue(bank, owner):
    a = propose_item(bank, title="A")  # proposed 5 days ago, approved 2 days ago
    b = propose_item(bank, title="B")  # proposed 3 days ago, rejected today
    propose_item(bank, title="C")  # proposed today
    old = propose_item(bank, title="Old")  # proposed 40 days ago (before the window), still waiting
    memory_item_approve(item=a, author=owner)
    memory_item_reject(item=b, author=owner, reason="too specific")
    dated(a, "created", 5)
    dated(a, "approved", 2)
    dated(b, "created", 3)
    dated(old, "created", 40)
    # Clearing a review flag on an approved item writes an "approved" version: not an approval.
    memory_item_flag(item=a, reason="check again")
    memory_item_approve(item=a, author=owner)

    days = review_by_day(bank=bank)

    assert len(days) == 30 and days[-1].day == timezone.localdate()
    backlog = {(timezone.localdate() - d.day).days: d.backlog for d in days}
    approved = {(timezone.localdate() - d.day).days: d.approved for d in days}
    assert [backlog[n] for n in (29, 6, 5, 4, 3, 2, 1, 0)] == [1, 1, 2, 2, 3, 2, 2, 2]
    assert approved == {n: (1 if n == 2 else 0) for n in range(30)}
    assert days[-1].backlog == 2  # C and Old: the queue's count today


def test_success_by_week_counts_verdicts_and_says_na_below_the_minimum(bank):
    this_week, three_weeks_ago = [], []
    for verdict in ["success"] * 4 + ["failure"]:
        this_week.append(make_trajectory(bank, status="done", verdict=verdict))
    three_weeks_ago.append(make_trajectory(bank, status="done", verdict="failure"))
    make_trajectory(bank, status="awaiting_llm")  # no verdict: not counted
    Trajectory.objects.filter(pk__in=[t.pk for t in three_weeks_ago]).update(created_at=at(21))

    weeks = success_by_week(bank=bank)

    assert len(weeks) == 12
    last, earlier = weeks[-1], weeks[-4]
    assert (last.x, last.n, last.value, last.text) == (4, 5, 0.8, "80% (4 of 5)")
    # One failure is one case: no "0%", the counts and how many more a rate needs.
    assert (earlier.x, earlier.n, earlier.value, earlier.text) == (0, 1, None, "0 of 1 (a rate needs 5 cases, 4 more)")
    assert weeks[0].text == "no case yet (a rate needs 5 cases, 5 more)"


def test_agreement_by_week_compares_each_llm_judgment_with_the_reviewers_latest(bank, owner):
    weeks_ago = {0: [], 2: []}
    # This week: 6 cases, the reviewer agrees on 3. Two weeks ago: 2 cases (n/a).
    for i, (llm, human) in enumerate([("success", "success")] * 3 + [("success", "failure")] * 3):
        t = make_trajectory(bank, status="done", task=f"task {i}")
        record_verdict(t, llm)
        record_verdict(t, human, source=JudgmentSource.HUMAN, author=owner)
        weeks_ago[0].append(t)
    for i in range(2):
        t = make_trajectory(bank, status="done", task=f"old task {i}")
        record_verdict(t, "failure")
        record_verdict(t, "success", source=JudgmentSource.HUMAN, author=owner)
        record_verdict(t, "failure", source=JudgmentSource.HUMAN, author=owner)  # the reviewer's latest word
        t.judgments.filter(source=JudgmentSource.LLM).update(created_at=at(14))
    unreviewed = make_trajectory(bank, status="done", task="only the judge")
    record_verdict(unreviewed, "success")

    weeks = agreement_by_week(bank=bank)

    assert (weeks[-1].x, weeks[-1].n, weeks[-1].text) == (3, 6, "50% (3 of 6)")
    assert (weeks[-3].x, weeks[-3].n, weeks[-3].value, weeks[-3].text) == (
        2,
        2,
        None,
        "2 of 2 (a rate needs 5 cases, 3 more)",
    )
    assert sum(w.n for w in weeks) == 8


def _figure(html: str, chart_id: str) -> str:
    match = re.search(rf'<figure class="chart" id="{chart_id}">(.*?)</figure>', html, re.S)
    assert match, f"no {chart_id} on the page"
    return match.group(1)


def test_dashboard_draws_the_charts_from_the_data(client, bank, owner):
    a, b = propose_item(bank, title="A"), propose_item(bank, title="B")
    memory_item_approve(item=a, author=owner)
    memory_item_approve(item=b, author=owner)
    dated(b, "approved", 3)
    for i in range(5):
        t = make_trajectory(bank, status="done", task=f"task {i}")
        record_verdict(t, "success")
        record_verdict(t, "success" if i else "failure", source=JudgmentSource.HUMAN, author=owner)
    client.force_login(owner)

    html = client.get(reverse("trajectories:dashboard", kwargs={"bank_id": bank.public_id})).content.decode()

    review = _figure(html, "chart-review")
    assert len(re.findall(r'<rect class="bar approved"', review)) == 2  # two days with an approval
    assert len(re.findall(r'<circle class="dot backlog"', review)) == 30  # the backlog, every day
    assert 'role="img"' in review and "<title id=" in review and "<desc id=" in review
    assert '<th scope="row">' in review and "1 approval</td>" in review  # the numbers as a table
    agreement = _figure(html, "chart-agreement")
    assert len(re.findall(r'<circle class="dot agreement"', agreement)) == 1  # this week: 5 cases
    assert agreement.count(">n/a<title>") == 11  # the other weeks: no cases
    assert "80% (4 of 5)" in agreement and ">n=5<" in agreement
    success = _figure(html, "chart-success")
    assert "80% (4 of 5)" in success  # the effective verdict: the reviewer said failure once
    # The 5-second refresh of the counts does not redraw (or query) the charts.
    live = client.get(
        reverse("trajectories:dashboard", kwargs={"bank_id": bank.public_id}),
        HTTP_HX_REQUEST="true",
        HTTP_HX_TARGET="live",
    ).content.decode()
    assert "chart-review" not in live


def test_chart_queries_do_not_grow_with_the_data(bank, owner):
    def queries() -> int:
        with CaptureQueriesContext(connection) as captured:
            dashboard_charts(bank=bank)
        return len(captured)

    empty = queries()
    for days_ago in range(0, 40, 3):
        item = propose_item(bank, title=f"Lesson {days_ago}")
        memory_item_approve(item=item, author=owner)
        dated(item, "created", days_ago + 1)
        dated(item, "approved", days_ago)
        t = make_trajectory(bank, status="done", verdict="success", task=f"t {days_ago}")
        Trajectory.objects.filter(pk=t.pk).update(created_at=at(days_ago))
    assert queries() == empty <= 4


def test_a_new_banks_weekly_rates_are_an_empty_state_not_twelve_weeks_of_na(client, owner, bank):
    record_verdict(make_trajectory(bank), "success")
    client.force_login(owner)
    html = client.get(reverse("trajectories:dashboard", kwargs={"bank_id": bank.public_id})).content.decode()
    success = re.search(r'<figure class="chart empty" id="chart-success" data-chart-empty>(.*?)</figure>', html, re.S)
    assert success and "Not enough data yet" in success.group(1)
    assert ">n/a<" not in html
    assert "<svg" in _figure(html, "chart-review")  # a chart with something to draw is still drawn


def test_the_empty_state_of_each_weekly_chart_is_a_whole_sentence(client, owner, bank):
    record_verdict(make_trajectory(bank), "success")
    client.force_login(owner)
    html = client.get(reverse("trajectories:dashboard", kwargs={"bank_id": bank.public_id})).content.decode()
    for chart_id in ("chart-success", "chart-agreement"):
        figure = re.search(rf'<figure class="chart empty" id="{chart_id}" data-chart-empty>(.*?)</figure>', html, re.S)
        assert figure, f"no empty {chart_id} on the page"
        text = " ".join(re.sub(r"<[^>]+>", " ", figure.group(1)).split())
        assert "Not enough data yet: no week so far has 5 cases, the fewest a rate is shown for." in text, text
        assert "week of so far" not in text
