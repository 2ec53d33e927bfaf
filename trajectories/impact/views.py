"""The Impact page (session auth): does the bank help its agents?"""

from __future__ import annotations

import math

from django.contrib.auth.decorators import login_required
from django.shortcuts import render

from accounts.access import bank_for_user
from reasoningbank_site.replica import reads_from_replica
from trajectories.impact.item_tables import kept_item_outcomes
from trajectories.impact.report import MIN_ITEM_JUDGED, WINDOWS, bank_impact, window_start

IMPACT_WINDOWS = [("7", "Last 7 days"), ("30", "Last 30 days"), ("90", "Last 90 days"), ("all", "All time")]


def _difference_bar(difference) -> dict | None:
    """Where to draw the always-valid interval (the verdict's) on a bar
    centred on zero: percentages of its width, on a symmetric scale that fits
    the interval (at least ±10 points)."""
    if difference is None:
        return None
    scale = max(0.1, abs(difference.cs_low), abs(difference.cs_high))
    scale = min(1.0, math.ceil(scale * 10) / 10)

    def at(value: float) -> float:
        return round(50 + 50 * value / scale, 2)

    return {
        "left": at(difference.cs_low),
        "width": round(at(difference.cs_high) - at(difference.cs_low), 2),
        "point": at(difference.estimate),
        "scale": round(scale * 100),
    }


@login_required
@reads_from_replica
def impact(request, bank_id):
    """Does the bank help? Treatment vs holdout success rates, their
    difference with an interval, a verdict, and per-item outcomes
    (trajectories.impact). ``?days=7|30|90|all`` picks the window."""
    bank, membership = bank_for_user(request, bank_id)
    window = request.GET.get("days", "all")
    if window not in WINDOWS:
        window = "all"
    days = WINDOWS[window]
    since = window_start(days)
    report = bank_impact(bank=bank, since=since)
    items, items_as_of = kept_item_outcomes(bank=bank, since=since, report=report)
    context = {
        "bank": bank,
        "membership": membership,
        "report": report,
        "window": window,
        "windows": IMPACT_WINDOWS,
        "items": items,
        "items_as_of": items_as_of,
        "arm_rows": [
            (report.treatment, "treatment", ("Treatment", "memories served")),
            *([(report.holdout, "holdout", ("Holdout", "memories withheld"))] if report.holdout_configured else []),
        ],
        "bar": _difference_bar(report.difference),
        "min_item_judged": MIN_ITEM_JUDGED,
        "api_base": request.build_absolute_uri("/api/v1/"),
    }
    return render(request, "trajectories/impact.html", context)
