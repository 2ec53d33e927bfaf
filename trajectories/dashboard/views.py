"""The bank's dashboard (session auth): pipeline counts, the review
backlog, judge agreement, recent activity, the charts and the LLM usage; its
counts refresh every few seconds."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.shortcuts import render

from accounts.access import bank_for_user
from memories.releases.selectors import bank_releasing
from reasoningbank_site.rates import MIN_CASES
from reasoningbank_site.replica import reads_from_replica
from reasoningbank_site.views_helpers import template_for
from trajectories.dashboard.llm_usage import bank_llm_usage
from trajectories.dashboard.report import dashboard_report, kept_report
from trajectories.dashboard.selectors import dashboard_agreement, recent_activity, review_backlog, status_counts
from trajectories.judging.evidence import disagreement_count
from trajectories.pipeline.llm import llm_configured


@login_required
@reads_from_replica
def dashboard(request, bank_id):
    bank, membership = bank_for_user(request, bank_id)
    template = template_for(request, "trajectories/dashboard.html", {"live": "live"})
    page = "#" not in template
    counts = status_counts(bank=bank)
    # The figures that grow with the human labels and the items come from the report, kept for a few minutes
    # (trajectories.dashboard.report): the whole page computes it when none is kept, or when asked to
    # (``?fresh``); the refresh shows the kept report's agreement and approved count, or reads them itself.
    report = dashboard_report(bank=bank, fresh="fresh" in request.GET) if page else kept_report(bank=bank)
    total = sum(n for _, _, n in counts)
    context = {
        "bank": bank,
        "membership": membership,
        "counts": counts,
        "total": total,
        "backlog": review_backlog(bank=bank, approved=report.approved if report else None),
        "disagreements": disagreement_count(bank=bank),
        "report": report,
        "agreement": report.agreement if report else dashboard_agreement(bank=bank),
        "min_cases": MIN_CASES,
        "activity": recent_activity(bank=bank),
        "llm_configured": llm_configured(),
        "api_base": request.build_absolute_uri("/api/v1/"),
    }
    if page:
        # The 5-second refresh (the ``live`` partial) redraws the counts only: what is per version, the
        # charts and the usage come with the whole page, and are read only for it.
        context |= {
            "agreement_by_version": report.agreement_by_version,
            "distill_by_version": report.distill_by_version,
            "charts": report.charts,
            "llm_usage": bank_llm_usage(bank=bank),
            "releasing": bank_releasing(bank=bank),
        }
    return render(request, template, context)
