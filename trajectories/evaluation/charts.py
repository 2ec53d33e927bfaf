"""An evaluation run's charts, drawn from its results (trajectories.evaluation.verdicts): per-task paired
outcomes and cost against success (scatters, templates/evaluation/run_chart_scatter.html), pass^k by k and
the history of evaluations across releases (lines, reasoningbank_site.charts and includes/chart_time.html).

Geometry only: numbers and short strings, escaped by the templates. Every chart carries a title, a
sentence saying what it shows, and its numbers as a table."""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass, field, replace

from reasoningbank_site.charts import Chart, Point, Series, Tick, _nice_max, time_chart
from reasoningbank_site.text import counted
from trajectories.evaluation.models import ArmKind, EvalRun, RunState

ARM_LABELS = dict(ArmKind.choices)
ARM_ORDER = [ArmKind.CANDIDATE, ArmKind.PRODUCTION, ArmKind.NO_MEMORY, ArmKind.CONTROL]
SIZE_W, SIZE_H = 360, 320
LEFT, RIGHT, TOP, BOTTOM = 52, 16, 14, 46
DOT_R, DOT_GAP, CLUSTER_MAX = 3.5, 7.5, 22  # a crowded cell's dots shrink to stay within CLUSTER_MAX
HISTORY_RUNS = 20
LABEL_GAP = 14


@dataclass(frozen=True)
class ScatterDot:
    x: float
    y: float
    r: float
    css: str
    title: str
    label: str = ""  # drawn beside the dot (an arm's name), so colour is never the only key
    label_x: float = 0
    label_y: float = 0
    anchor: str = "start"


@dataclass
class ScatterChart:
    id: str
    title: str
    desc: str
    x_label: str
    y_label: str
    headers: list[str]  # the table alternative: its column heads, then one row per dot
    rows: list[list[str]]
    empty: str = ""  # said instead of the chart when there is nothing to draw
    width: int = SIZE_W
    height: int = SIZE_H
    left: int = LEFT
    top: int = TOP
    right_edge: int = SIZE_W - RIGHT
    baseline: int = SIZE_H - BOTTOM
    x_ticks: list[Tick] = field(default_factory=list)
    y_ticks: list[Tick] = field(default_factory=list)
    dots: list[ScatterDot] = field(default_factory=list)
    diagonal: tuple[float, float, float, float] | None = None
    legend: list[tuple[str, str]] = field(default_factory=list)  # (css, what it means)

    @property
    def y_label_y(self) -> float:
        return (self.top + self.baseline) / 2

    @property
    def x_label_y(self) -> float:
        return self.height - 6


def _r1(value: float) -> float:
    return round(value, 1)


def _pct(value: float | None) -> str:
    return "n/a" if value is None else f"{value * 100:.0f}%"


def _axes(chart: ScatterChart, *, x_max: float, y_max: float, x_percent: bool, y_percent: bool, pad: float):
    """Map data to SVG units (each axis from 0, with ``pad`` of its range around it) and lay out the ticks."""
    plot_w, plot_h = chart.right_edge - chart.left, chart.baseline - chart.top

    def x_of(value: float) -> float:
        return _r1(chart.left + plot_w * (value / x_max + pad) / (1 + 2 * pad))

    def y_of(value: float) -> float:
        return _r1(chart.baseline - plot_h * (value / y_max + pad) / (1 + 2 * pad))

    for step in range(5):
        xv, yv = x_max * step / 4, y_max * step / 4
        chart.x_ticks.append(Tick(x_of(xv), f"{round(xv * 100)}%" if x_percent else f"{xv:g}"))
        chart.y_ticks.append(Tick(y_of(yv), f"{round(yv * 100)}%" if y_percent else f"{yv:g}"))
    return x_of, y_of


def _cluster(count: int) -> list[tuple[float, float, float]]:
    """Offsets (dx, dy) and a radius for ``count`` dots that share one point: rings around it, so each
    task stays one visible dot; a crowded point's dots shrink to keep the cluster within CLUSTER_MAX."""
    rings, placed = 0, 1
    while placed < count:
        rings += 1
        placed += 6 * rings
    gap = min(DOT_GAP, CLUSTER_MAX / rings) if rings else DOT_GAP
    radius = min(DOT_R, gap / 2.1)
    offsets = [(0.0, 0.0)]
    ring = 1
    while len(offsets) < count:
        slots = 6 * ring
        for i in range(slots):
            angle = 2 * math.pi * i / slots
            offsets.append((_r1(gap * ring * math.cos(angle)), _r1(gap * ring * math.sin(angle))))
        ring += 1
    return [(dx, dy, radius) for dx, dy in offsets[:count]]


def _share(cell: dict | None) -> float | None:
    if not cell or not cell.get("known"):
        return None
    return cell["successes"] / cell["known"]


def paired_chart(results: dict, *, arm: str, versus: str) -> ScatterChart:
    """One dot per task with a known outcome in both arms: x = its success share in ``versus``, y = in
    ``arm``. Above the diagonal, ``arm`` solved it more often."""
    a_name, b_name = ARM_LABELS.get(arm, arm), ARM_LABELS.get(versus, versus)
    chart = ScatterChart(
        id=f"chart-paired-{versus}",
        title=f"Per task: {a_name.lower()} against {b_name.lower()}",
        desc="",
        x_label=f"success share, {b_name.lower()}",
        y_label=f"success share, {a_name.lower()}",
        headers=["Task", b_name, a_name, "Where"],
        rows=[],
        legend=[("above", f"above the line: {a_name.lower()} did better"), ("below", f"below: {b_name.lower()} did")],
    )
    x_of, y_of = _axes(chart, x_max=1, y_max=1, x_percent=True, y_percent=True, pad=0.08)
    chart.diagonal = (x_of(0), y_of(0), x_of(1), y_of(1))
    cells: dict[tuple[float, float], list[tuple[str, float, float, str]]] = defaultdict(list)
    sides = {"above": 0, "below": 0, "on": 0}
    for task in results.get("per_task", []):
        x, y = _share(task["arms"].get(versus)), _share(task["arms"].get(arm))
        if x is None or y is None:
            continue
        side = "above" if y > x else "below" if y < x else "on"
        sides[side] += 1
        cells[(x, y)].append((task["key"], x, y, side))
        counts = [task["arms"][kind] for kind in (versus, arm)]
        where = {"above": f"{a_name} better", "below": f"{b_name} better", "on": "the same"}[side]
        chart.rows.append([task["key"], *(f"{c['successes']}/{c['known']}" for c in counts), where])
    for (x, y), tasks in cells.items():
        for (key, _, _, side), (dx, dy, r) in zip(tasks, _cluster(len(tasks)), strict=True):
            title = f"{key}: {a_name} {y * 100:.0f}%, {b_name} {x * 100:.0f}%"
            chart.dots.append(ScatterDot(_r1(x_of(x) + dx), _r1(y_of(y) + dy), r, side, title))
    shown = len(chart.rows)
    chart.desc = (
        f"{counted(shown, 'task')} with known outcomes in both arms: {sides['above']} above the diagonal "
        f"({a_name.lower()} solved it more often), {sides['below']} below, {sides['on']} on it."
    )
    if not shown:
        chart.empty = "No task has a known outcome in both arms yet."
    return chart


def cost_chart(results: dict) -> ScatterChart:
    """One point per arm: its tokens per try (x) against its success rate (y)."""
    arms = results.get("arms", {})
    chart = ScatterChart(
        id="chart-cost",
        title="Cost against success, per arm",
        desc="",
        x_label="tokens per try",
        y_label="success rate",
        headers=["Arm", "Tokens per try", "Success rate", "Cost per try"],
        rows=[],
    )
    drawn = [(kind, arms[kind]) for kind in ARM_ORDER if kind in arms]
    points = [
        (kind, a) for kind, a in drawn if a.get("tokens_per_try") is not None and a.get("success_rate") is not None
    ]
    x_max = _nice_max(max((a["tokens_per_try"] for _, a in points), default=0))
    x_of, y_of = _axes(chart, x_max=x_max, y_max=1, x_percent=False, y_percent=True, pad=0.05)
    for kind, a in drawn:
        name = ARM_LABELS.get(kind, kind)
        tokens = a.get("tokens_per_try")
        cost = a.get("cost_per_try")
        chart.rows.append(
            [
                name,
                "not reported" if tokens is None else f"{tokens:,.0f}",
                _pct(a.get("success_rate")),
                "unknown" if cost is None else f"${cost:.4f}",
            ]
        )
        if (kind, a) in points:
            title = f"{name}: {tokens:,.0f} tokens per try, {_pct(a['success_rate'])} success"
            chart.dots.append(
                ScatterDot(x_of(tokens), y_of(a["success_rate"]), 5, f"arm-{kind}", title, label=name.lower())
            )
    _place_labels(chart)
    missing = len(drawn) - len(points)
    chart.desc = (
        f"{counted(len(points), 'arm')} drawn: up and to the left is better (more success for fewer tokens)."
        + (
            f" {counted(missing, 'arm')} without reported tokens or outcomes {'is' if missing == 1 else 'are'} only in the table."
            if missing
            else ""
        )
    )
    if not points:
        chart.empty = "No arm has both reported tokens and known outcomes yet: agents report usage with each try."
    return chart


def _place_labels(chart: ScatterChart) -> None:
    """Put each dot's label beside it, towards the middle of the plot, and at least LABEL_GAP below the
    label above it, so labels of arms with similar numbers do not overprint."""
    middle = (chart.left + chart.right_edge) / 2
    last = -LABEL_GAP
    for i, dot in sorted(enumerate(chart.dots), key=lambda pair: pair[1].y):
        y = max(dot.y - 6, last + LABEL_GAP)
        last = y
        left = dot.x > middle
        chart.dots[i] = replace(
            dot, label_x=_r1(dot.x - 9 if left else dot.x + 9), label_y=_r1(y), anchor="end" if left else "start"
        )


def pass_k_chart(results: dict) -> Chart:
    """pass^k for k = 1..K, one line per arm: the share of tasks solved in all of k tries."""
    arms = results.get("arms", {})
    k = int(results.get("k") or 0)
    kinds = [kind for kind in ARM_ORDER if kind in arms]
    series = []
    for kind in kinds:
        values = arms[kind].get("pass_hat_k", {})
        points = [values.get(str(n)) for n in range(1, k + 1)]
        series.append(
            Series(
                ARM_LABELS[kind],
                "line",
                f"arm-{kind}",
                [Point(v, _pct(v)) for v in points],
            )
        )
    return time_chart(
        chart_id="chart-pass-k",
        title="pass^k by k",
        desc=(
            f"The share of the {counted(int(results.get('tasks') or 0), 'task')} solved in all of k tries, "
            f"for k from 1 to {k}, per arm: a line that falls fast means an arm that succeeds by luck."
        ),
        x_labels=[str(n) for n in range(1, k + 1)],
        series=series,
        y_label="pass^k",
        x_label="k (tries)",
        percent=True,
        empty="No arm has known outcomes yet.",
    )


def history_chart(*, runs: list[EvalRun]) -> Chart:
    """The bank's finished runs with a candidate arm, oldest first: the candidate release's success rate
    and production's in the same run."""
    labels, candidate, production = [], [], []
    for run in runs:
        arms = (run.results or {}).get("arms", {})
        release = arms.get(ArmKind.CANDIDATE, {}).get("release")
        labels.append(f"#{release}" if release is not None else "?")
        for line, kind in ((candidate, ArmKind.CANDIDATE), (production, ArmKind.PRODUCTION)):
            rate = arms.get(kind, {}).get("success_rate")
            note = f"run of {run.created_at:%b} {run.created_at.day}"
            line.append(Point(rate, f"{_pct(rate)} ({note})" if rate is not None else f"n/a: no {kind} arm ({note})"))
    return time_chart(
        chart_id="chart-history",
        title="Evaluations across releases",
        desc=(
            f"The last {counted(len(runs), 'finished evaluation')} with a candidate, oldest first: the candidate "
            "release's success rate beside production's in the same run."
        ),
        x_labels=labels,
        series=[
            Series("Candidate", "line", f"arm-{ArmKind.CANDIDATE}", candidate),
            Series("Production", "line", f"arm-{ArmKind.PRODUCTION}", production),
        ],
        y_label="success rate",
        x_label="candidate release",
        percent=True,
        empty="No finished evaluation has known outcomes yet.",
    )


def history_runs(*, bank) -> list[EvalRun]:
    """The bank's last finished runs that had a candidate arm, oldest first (one query)."""
    runs = (
        EvalRun.objects.filter(bank=bank, state=RunState.FINISHED, arms__kind=ArmKind.CANDIDATE)
        .only("public_id", "results", "created_at")
        .order_by("-created_at")[:HISTORY_RUNS]
    )
    return [run for run in reversed(runs) if (run.results or {}).get("arms")]
