"""The Impact page (session auth): does the bank help its agents?"""

from __future__ import annotations

import math
import time

from django.contrib.auth.decorators import login_required
from django.shortcuts import render
from django.urls import reverse

from accounts.access import bank_for_user
from reasoningbank_site.kept_queue import kept_poll, poll_started
from reasoningbank_site.replica import reads_from_replica
from trajectories.impact.item_tables import kept_item_table
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


def _window(request):
    window = request.GET.get("days", "all")
    if window not in WINDOWS:
        window = "all"
    return window, window_start(WINDOWS[window])


def _items_context(bank, window, since, report, started: float) -> dict:
    """What the page's per-item part (``impact.html#items``) shows: the table,
    or, while a worker computes it (``pending``) or recomputes an outdated
    one shown meanwhile (``recomputing``), a placeholder that polls for the
    new one until reasoningbank_site.kept_queue.POLL_GIVE_UP_SECONDS after
    ``started`` (a Unix time), then gives up."""
    table = kept_item_table(bank=bank, since=since, report=report)
    url = reverse("trajectories:impact_items", kwargs={"bank_id": bank.public_id}) + f"?days={window}"
    return {
        "items": table.outcomes,
        "items_as_of": None if table.current else table.computed_at,
        "items_poll": kept_poll(url, pending=table.pending, recomputing=table.recomputing, started=started),
        "min_item_judged": MIN_ITEM_JUDGED,
    }


@login_required
@reads_from_replica
def impact(request, bank_id):
    """Does the bank help? Treatment vs holdout success rates, their
    difference with an interval, a verdict, and per-item outcomes
    (trajectories.impact). ``?days=7|30|90|all`` picks the window."""
    bank, membership = bank_for_user(request, bank_id)
    window, since = _window(request)
    report = bank_impact(bank=bank, since=since)
    context = {
        "bank": bank,
        "membership": membership,
        "report": report,
        "window": window,
        "windows": IMPACT_WINDOWS,
        **_items_context(bank, window, since, report, time.time()),
        "arm_rows": [
            (report.treatment, "treatment", ("Treatment", "memories served")),
            *([(report.holdout, "holdout", ("Holdout", "memories withheld"))] if report.holdout_configured else []),
        ],
        "bar": _difference_bar(report.difference),
        "api_base": request.build_absolute_uri("/api/v1/"),
    }
    return render(request, "trajectories/impact.html", context)


@login_required
@reads_from_replica
def impact_items(request, bank_id):
    """The Impact page's per-item part alone (``impact.html#items``), which the
    page polls while a worker computes (or recomputes) a big window's table.
    ``started``: when the page began waiting (Unix time; now when absent)."""
    bank, _membership = bank_for_user(request, bank_id)
    window, since = _window(request)
    started = poll_started(request)
    report = bank_impact(bank=bank, since=since)
    context = {"bank": bank, "report": report, "window": window}
    context |= _items_context(bank, window, since, report, started)
    return render(request, "trajectories/impact.html#items", context)
