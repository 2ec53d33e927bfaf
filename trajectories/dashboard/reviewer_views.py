"""The per-reviewer statistics page (session auth): each reviewer's
decisions per day and agreement with the other reviewers and the LLM judge,
over the last 14 or 30 days. A big bank's figures are kept a few minutes and
computed by a worker, never on a request (trajectories.dashboard.reviewer_report);
?fresh=1 queues their recompute."""

from __future__ import annotations

import time

from django.contrib.auth.decorators import login_required
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.http import require_GET

from accounts.access import bank_for_user
from reasoningbank_site.kept_queue import kept_poll, poll_started
from reasoningbank_site.rates import MIN_CASES
from trajectories.dashboard.reviewer_report import reviewer_report
from trajectories.dashboard.reviewers import BAR_STEP, CHART_HEIGHT, PERIODS


def _days(request) -> int:
    return int(request.GET["days"]) if request.GET.get("days") in {str(p) for p in PERIODS} else PERIODS[0]


def _context(request, bank, days: int, started: float) -> dict:
    """The page's figures, or, while a worker computes them (or recomputes the kept ones, shown meanwhile), a
    placeholder that polls the figures fragment until POLL_GIVE_UP_SECONDS after ``started`` (a Unix time)."""
    shown = reviewer_report(bank=bank, days=days, fresh=request.GET.get("fresh") == "1")
    figures = shown.figures
    url = reverse("trajectories:reviewers_figures", kwargs={"bank_id": bank.public_id}) + f"?days={days}"
    return {
        "bank": bank,
        "rows": figures.rows if figures else [],
        "figures": figures,
        "figures_poll": kept_poll(url, pending=shown.pending, recomputing=shown.recomputing, started=started),
        "days": days,
        "min_cases": MIN_CASES,
        "chart_height": CHART_HEIGHT,
        "chart_width": days * BAR_STEP,
        "agreement": figures.agreement if figures else None,
    }


@login_required
@require_GET
def reviewers(request, bank_id):
    """Per-reviewer statistics over the last 14 or 30 days. A big bank's figures are kept a few minutes
    (trajectories.dashboard.reviewer_report); ?fresh=1 queues their recompute."""
    bank, membership = bank_for_user(request, bank_id)
    context = _context(request, bank, _days(request), time.time())
    return render(request, "trajectories/reviewers.html", context | {"membership": membership, "periods": PERIODS})


@login_required
@require_GET
def reviewers_figures(request, bank_id):
    """The page's figures alone (``reviewers.html#figures``), which the page polls while a worker computes (or
    recomputes) a big bank's. ``started``: when the page began waiting (Unix time; now when absent)."""
    bank, _membership = bank_for_user(request, bank_id)
    return render(
        request, "trajectories/reviewers.html#figures", _context(request, bank, _days(request), poll_started(request))
    )
