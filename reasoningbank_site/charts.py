"""Server-drawn SVG charts: this module turns a few series over time into
plain geometry (numbers and short strings), and templates/includes/chart_time.html
draws it as inline SVG with a data table. No JavaScript, no outside asset;
every string reaches the page through the template's auto-escaping.

A series is bars or a line; a point whose value is None (too few cases) is a
gap in the line, marked "n/a" on the chart and explained in the table."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

WIDTH, HEIGHT = 480, 230
LEFT, RIGHT, TOP, BOTTOM = 58, 24, 12, 50
MAX_X_LABELS = 6


@dataclass(frozen=True)
class Point:
    value: float | None  # None: no value to draw (shown as "n/a")
    text: str  # what the tooltip and the table say: "4 approvals", "n/a (2 cases)"
    note: str = ""  # a short line under the x label, e.g. "n=7"


@dataclass(frozen=True)
class Series:
    name: str
    kind: str  # "bar" | "line"
    css: str  # colour class
    points: list[Point]


@dataclass(frozen=True)
class Tick:
    at: float  # x or y in SVG units
    label: str


@dataclass(frozen=True)
class Bar:
    x: float
    y: float
    width: float
    height: float
    css: str
    title: str


@dataclass(frozen=True)
class Dot:
    x: float
    y: float
    css: str
    title: str


@dataclass(frozen=True)
class Gap:
    x: float
    y: float
    title: str


@dataclass
class Chart:
    id: str
    title: str
    desc: str
    y_label: str
    x_label: str
    x_labels: list[str]
    series: list[Series]
    percent: bool
    # What the chart says instead when every point is n/a: a whole sentence, numbers written in.
    empty: str = "Not enough data yet: no period so far has enough cases for a rate."
    width: int = WIDTH
    height: int = HEIGHT
    left: int = LEFT
    top: int = TOP
    right_edge: int = WIDTH - RIGHT
    baseline: int = HEIGHT - BOTTOM
    y_ticks: list[Tick] = field(default_factory=list)
    x_ticks: list[Tick] = field(default_factory=list)
    notes: list[Tick] = field(default_factory=list)
    bars: list[Bar] = field(default_factory=list)
    lines: list[tuple[str, str]] = field(default_factory=list)  # (css, path d)
    dots: list[Dot] = field(default_factory=list)
    gaps: list[Gap] = field(default_factory=list)

    @property
    def rows(self) -> list[tuple[str, list[str]]]:
        """The table: one row per x label with each series' text."""
        return [(label, [s.points[i].text for s in self.series]) for i, label in enumerate(self.x_labels)]

    @property
    def y_label_x(self) -> float:
        return 14

    @property
    def y_label_y(self) -> float:
        return (self.top + self.baseline) / 2

    @property
    def x_label_y(self) -> float:
        return self.height - 4


def _nice_max(value: float) -> int:
    """The smallest of 1, 2, 5 × 10^k (k ≥ 0) that is ≥ value (at least 4, so ticks are whole numbers)."""
    if value <= 4:
        return 4
    magnitude = 10 ** math.floor(math.log10(value))
    for step in (1, 2, 2.5, 5, 10):
        if step * magnitude >= value:
            return math.ceil(step * magnitude)
    return math.ceil(10 * magnitude)


def _fmt(number: float) -> str:
    return f"{number:.1f}"


def time_chart(
    *,
    chart_id: str,
    title: str,
    desc: str,
    x_labels: list[str],
    series: list[Series],
    y_label: str,
    x_label: str,
    percent: bool = False,
    empty: str = "",
) -> Chart:
    """Lay out ``series`` (each with one point per x label) over the x labels,
    sharing one y axis from 0: 0–100% when ``percent`` (values are fractions),
    else 0 to a round number above the largest value. ``empty`` is the sentence
    shown instead when no point has a value."""
    chart = Chart(chart_id, title, desc, y_label, x_label, x_labels, series, percent)
    if empty:
        chart.empty = empty
    count = len(x_labels)
    if not count:
        return chart
    plot_w, plot_h = chart.right_edge - chart.left, chart.baseline - chart.top
    slot = plot_w / count
    values = [p.value for s in series for p in s.points if p.value is not None]
    top = 1.0 if percent else _nice_max(max(values, default=0))

    def y_of(value: float) -> float:
        return chart.baseline - plot_h * (value / top)

    for step in range(5):
        value = top * step / 4
        label = f"{round(value * 100)}%" if percent else f"{value:g}"
        chart.y_ticks.append(Tick(float(_fmt(y_of(value))), label))

    every = max(1, math.ceil(count / MAX_X_LABELS))
    for i, label in enumerate(x_labels):
        centre = chart.left + slot * (i + 0.5)
        if (count - 1 - i) % every == 0:  # always label the newest point
            chart.x_ticks.append(Tick(float(_fmt(centre)), label))
        notes = [s.points[i].note for s in series if s.points[i].note]
        if notes:
            chart.notes.append(Tick(float(_fmt(centre)), " ".join(notes)))

    bar_series = [s for s in series if s.kind == "bar"]
    bar_w = slot * 0.7 / max(len(bar_series), 1)
    for b, s in enumerate(bar_series):
        for i, p in enumerate(s.points):
            if not p.value:
                continue
            x = chart.left + slot * i + slot * 0.15 + bar_w * b
            y = y_of(p.value)
            chart.bars.append(
                Bar(
                    float(_fmt(x)),
                    float(_fmt(y)),
                    float(_fmt(bar_w)),
                    float(_fmt(chart.baseline - y)),
                    s.css,
                    f"{x_labels[i]}: {p.text}",
                )
            )

    for s in series:
        if s.kind != "line":
            continue
        path, pen_down = [], False
        for i, p in enumerate(s.points):
            centre = chart.left + slot * (i + 0.5)
            if p.value is None:
                pen_down = False
                chart.gaps.append(Gap(float(_fmt(centre)), float(chart.baseline - 6), f"{x_labels[i]}: {p.text}"))
                continue
            y = y_of(p.value)
            path.append(f"{'L' if pen_down else 'M'}{_fmt(centre)} {_fmt(y)}")
            pen_down = True
            chart.dots.append(Dot(float(_fmt(centre)), float(_fmt(y)), s.css, f"{x_labels[i]}: {p.text}"))
        if path:
            chart.lines.append((s.css, " ".join(path)))
    return chart
