"""The dashboard's three charts: the selectors' per-day / per-week series
(trajectories.dashboard.selectors) laid out by reasoningbank_site.charts."""

from __future__ import annotations

from accounts.models import Bank
from reasoningbank_site.charts import Chart, Point, Series, time_chart
from reasoningbank_site.rates import MIN_CASES
from reasoningbank_site.text import counted
from trajectories.dashboard.selectors import PeriodRate, agreement_by_week, review_by_day, success_by_week


def _day(d) -> str:
    return f"{d:%b} {d.day}"


def _rate_points(rates) -> list[Point]:
    return [Point(r.value, r.text, note=f"n={r.n}") for r in rates]


def dashboard_charts(*, bank: Bank, agreement: list[PeriodRate] | None = None) -> list[Chart]:
    """Review backlog and approvals per day (30 days), success rate and
    judge-vs-human agreement per week (12 weeks, with the cases per week; ``agreement``: those weeks as
    already read). Four queries (three with ``agreement``)."""
    review = review_by_day(bank=bank)
    success = success_by_week(bank=bank)
    agreement = agreement_by_week(bank=bank) if agreement is None else agreement
    approvals = sum(d.approved for d in review)
    min_cases = counted(MIN_CASES, "case")
    empty_weeks = f"Not enough data yet: no week so far has {min_cases}, the fewest a rate is shown for."
    return [
        time_chart(
            chart_id="chart-review",
            title="Review backlog and approvals per day",
            desc=(
                f"Last {len(review)} days: {counted(approvals, 'approval')}; the backlog went from "
                f"{review[0].backlog} to {review[-1].backlog} proposed items."
            ),
            x_labels=[_day(d.day) for d in review],
            series=[
                Series(
                    "Approved that day",
                    "bar",
                    "approved",
                    [Point(d.approved, counted(d.approved, "approval")) for d in review],
                ),
                Series(
                    "Backlog at day's end",
                    "line",
                    "backlog",
                    [Point(d.backlog, f"{counted(d.backlog, 'item')} waiting") for d in review],
                ),
            ],
            y_label="items",
            x_label="day",
        ),
        time_chart(
            chart_id="chart-success",
            title="Success rate per week",
            desc=(
                f"Trajectories judged a success, of those with a verdict, per week of arrival over {len(success)} weeks; "
                f"weeks with fewer than {min_cases} show n/a."
            ),
            x_labels=[_day(r.start) for r in success],
            series=[Series("Success rate", "line", "success", _rate_points(success))],
            y_label="success",
            x_label="week of",
            percent=True,
            empty=empty_weeks,
        ),
        time_chart(
            chart_id="chart-agreement",
            title="Judge vs. human agreement per week",
            desc=(
                f"LLM judgments that match the reviewer's latest verdict, per week of the LLM judgment over {len(agreement)} weeks, "
                f"with the number of cases (n) under each week; weeks with fewer than {min_cases} show n/a."
            ),
            x_labels=[_day(r.start) for r in agreement],
            series=[Series("Agreement", "line", "agreement", _rate_points(agreement))],
            y_label="agreement",
            x_label="week of",
            percent=True,
            empty=empty_weeks,
        ),
    ]
