"""Server-drawn charts: time_chart lays series out as plain geometry — one
y axis from 0 to a round maximum (or 0-100 %), bars per slot, lines broken
at missing values, x labels thinned but never the newest — and the template
draws it with every text escaped."""

import pytest
from django.template.loader import render_to_string

from reasoningbank_site.charts import HEIGHT, LEFT, TOP, WIDTH, Point, Series, time_chart

BASELINE = HEIGHT - 50


def _chart(x_labels, series, percent=False):
    return time_chart(
        chart_id="c", title="t", desc="d", x_labels=x_labels, series=series, y_label="y", x_label="x", percent=percent
    )


@pytest.mark.parametrize(("largest", "top"), [(0, 4), (3, 4), (7, 10), (11, 20), (23, 25), (420, 500), (1000, 1000)])
def test_the_y_axis_runs_from_zero_to_a_round_number_above_the_largest_value(largest, top):
    chart = _chart(["Mon"], [Series("n", "bar", "a", [Point(largest, str(largest))])])
    assert [tick.label for tick in chart.y_ticks] == [f"{top * step / 4:g}" for step in range(5)]
    assert chart.y_ticks[0].at == BASELINE and chart.y_ticks[-1].at == TOP


def test_a_percent_chart_runs_to_100_and_a_bar_is_as_tall_as_its_value():
    chart = _chart(["Mon", "Tue"], [Series("rate", "bar", "a", [Point(0.5, "50%"), Point(0, "0%")])], percent=True)
    assert [tick.label for tick in chart.y_ticks] == ["0%", "25%", "50%", "75%", "100%"]
    [bar] = chart.bars  # a zero value draws no bar
    assert bar.height == pytest.approx((BASELINE - TOP) / 2, abs=0.1)
    assert bar.title == "Mon: 50%"


def test_a_missing_value_breaks_the_line_and_is_marked():
    values = [1, 2, None, 3]
    chart = _chart(["a", "b", "c", "d"], [Series("s", "line", "l", [Point(v, str(v)) for v in values])])
    [(css, path)] = chart.lines
    assert css == "l" and path.count("M") == 2 and path.count("L") == 1  # a, b joined; d starts again
    assert [gap.title for gap in chart.gaps] == ["c: None"]
    assert len(chart.dots) == 3


def test_x_labels_are_thinned_to_six_counting_back_from_the_newest():
    labels = [f"day {n}" for n in range(14)]
    chart = _chart(labels, [Series("s", "bar", "a", [Point(1, "1")] * 14)])
    shown = [tick.label for tick in chart.x_ticks]
    assert len(shown) <= 6 and shown[-1] == "day 13"
    assert all(LEFT <= tick.at <= WIDTH for tick in chart.x_ticks)
    assert chart.rows[0] == ("day 0", ["1"])  # the table keeps every point


def test_no_labels_make_an_empty_chart():
    chart = _chart([], [])
    assert (chart.y_ticks, chart.bars, chart.lines) == ([], [], [])


def test_no_text_reaches_the_svg_unescaped():
    chart = time_chart(
        chart_id="chart-x",
        title='<script>alert("t")</script>',
        desc="</desc><script>",
        x_labels=["<b>Mon</b>", "Tue"],
        series=[Series('<img src=x onerror="y">', "line", "success", [Point(0.5, "<i>half</i>"), Point(None, "n/a")])],
        y_label="<y>",
        x_label="<x>",
        percent=True,
    )
    html = render_to_string("includes/chart_time.html", {"chart": chart})
    assert "<script>" not in html and "<b>" not in html and "<img" not in html and "<i>" not in html
    assert "&lt;script&gt;alert(&quot;t&quot;)&lt;/script&gt;" in html
    assert "&lt;b&gt;Mon&lt;/b&gt;: &lt;i&gt;half&lt;/i&gt;" in html  # the dot's tooltip
    assert html.count("<circle") == 1 and html.count(">n/a<title>") == 1
