"""The per-reviewer statistics page (session auth): each reviewer's
decisions per day and agreement with the other reviewers and the LLM judge,
over the last 14 or 30 days. A big bank's figures are kept a few minutes
(trajectories.dashboard.reviewer_report); ?fresh=1 recomputes them."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.shortcuts import render
from django.views.decorators.http import require_GET

from accounts.access import bank_for_user
from reasoningbank_site.rates import MIN_CASES
from trajectories.dashboard.reviewer_report import reviewer_report
from trajectories.dashboard.reviewers import BAR_STEP, CHART_HEIGHT, PERIODS


@login_required
@require_GET
def reviewers(request, bank_id):
    """Per-reviewer statistics over the last 14 or 30 days. A big bank's figures are kept a few minutes
    (trajectories.dashboard.reviewer_report); ?fresh=1 recomputes them."""
    bank, membership = bank_for_user(request, bank_id)
    days = int(request.GET["days"]) if request.GET.get("days") in {str(p) for p in PERIODS} else PERIODS[0]
    figures = reviewer_report(bank=bank, days=days, fresh=request.GET.get("fresh") == "1")
    context = {
        "bank": bank,
        "membership": membership,
        "rows": figures.rows,
        "figures": figures,
        "days": days,
        "periods": PERIODS,
        "min_cases": MIN_CASES,
        "chart_height": CHART_HEIGHT,
        "chart_width": days * BAR_STEP,
        "agreement": figures.agreement,
    }
    return render(request, "trajectories/reviewers.html", context)
