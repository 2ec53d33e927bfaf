"""The per-reviewer statistics page (session auth): each reviewer's
decisions per day and agreement with the other reviewers and the LLM judge,
over the last 14 or 30 days."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.shortcuts import render
from django.views.decorators.http import require_GET

from accounts.access import bank_for_user
from memories.review.agreement import bank_agreement
from reasoningbank_site.rates import MIN_CASES
from trajectories.dashboard.reviewers import BAR_STEP, CHART_HEIGHT, PERIODS, reviewer_stats


@login_required
@require_GET
def reviewers(request, bank_id):
    """Per-reviewer statistics over the last 14 or 30 days."""
    bank, membership = bank_for_user(request, bank_id)
    days = int(request.GET["days"]) if request.GET.get("days") in {str(p) for p in PERIODS} else PERIODS[0]
    rows = reviewer_stats(bank=bank, days=days)
    context = {
        "bank": bank,
        "membership": membership,
        "rows": rows,
        "days": days,
        "periods": PERIODS,
        "min_cases": MIN_CASES,
        "chart_height": CHART_HEIGHT,
        "chart_width": days * BAR_STEP,
        "agreement": bank_agreement(bank=bank),
    }
    return render(request, "trajectories/reviewers.html", context)
