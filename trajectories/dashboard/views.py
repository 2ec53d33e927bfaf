"""The bank's dashboard (session auth): pipeline counts, the review
backlog, judge agreement, recent activity, the charts and the LLM usage; its
counts refresh every few seconds."""

from __future__ import annotations

import time

from django.contrib.auth.decorators import login_required
from django.http import HttpResponse
from django.shortcuts import render
from django.template.loader import render_to_string
from django.urls import reverse

from accounts.access import bank_for_user
from memories.releases.selectors import bank_releasing
from reasoningbank_site.kept_queue import KeptFigures, kept_poll, poll_started
from reasoningbank_site.rates import MIN_CASES
from reasoningbank_site.replica import reads_from_replica
from reasoningbank_site.views_helpers import template_for
from trajectories.dashboard.llm_usage import bank_llm_usage
from trajectories.dashboard.report import DashboardReport, dashboard_report, refresh_report
from trajectories.dashboard.selectors import recent_activity, review_backlog, status_counts
from trajectories.judging.evidence import disagreement_count
from trajectories.pipeline.llm import llm_configured

TEMPLATE = "trajectories/dashboard.html"


def _report_context(bank, shown: KeptFigures[DashboardReport], started: float) -> dict:
    """The report's part of the page: its figures, or, while a worker computes them, placeholders of which
    one polls the figures fragment until POLL_GIVE_UP_SECONDS after ``started`` (a Unix time); while a worker
    recomputes them, the kept figures and that placeholder beside them."""
    report = shown.figures
    url = reverse("trajectories:dashboard_figures", kwargs={"bank_id": bank.public_id})
    return {
        "report": report,
        "report_poll": kept_poll(url, pending=shown.pending, recomputing=shown.recomputing, started=started),
        "agreement_by_version": report.agreement_by_version if report else [],
        "distill_by_version": report.distill_by_version if report else [],
        "charts": report.charts if report else [],
    }


@login_required
@reads_from_replica
def dashboard(request, bank_id):
    bank, membership = bank_for_user(request, bank_id)
    template = template_for(request, TEMPLATE, {"live": "live"})
    page = "#" not in template
    counts = status_counts(bank=bank)
    # The figures that grow with the human labels and the items come from the report, kept for a few minutes
    # (trajectories.dashboard.report): a small bank's page computes it when none is kept, or when asked to
    # (``?fresh``); a big bank's is computed by a worker, never here. The refresh computes none
    # (refresh_report): it shows the kept report's agreement, or a small bank's agreement.
    total = sum(n for _, _, n in counts)
    if page:
        shown = dashboard_report(bank=bank, trajectories=total, fresh="fresh" in request.GET)
        agreement = shown.figures.agreement if shown.figures else None
    else:
        shown, agreement = refresh_report(bank=bank, trajectories=total)
    context = {
        "bank": bank,
        "membership": membership,
        "counts": counts,
        "total": total,
        "backlog": review_backlog(bank=bank),
        "disagreements": disagreement_count(bank=bank),
        "agreement": agreement,
        "min_cases": MIN_CASES,
        "activity": recent_activity(bank=bank),
        "llm_configured": llm_configured(),
        "api_base": request.build_absolute_uri("/api/v1/"),
        **_report_context(bank, shown, time.time()),
    }
    if page:
        # The 5-second refresh (the ``live`` partial) redraws the counts only: what is per version, the
        # charts and the usage come with the whole page, and are read only for it.
        context |= {"llm_usage": bank_llm_usage(bank=bank), "releasing": bank_releasing(bank=bank)}
    return render(request, template, context)


@login_required
@reads_from_replica
def dashboard_figures(request, bank_id):
    """The report's parts (``dashboard.html#charts``, with ``#by_version`` and the "Judge vs. human" panel,
    ``#judge``, swapped out of band), which the page polls while a worker computes (or recomputes) a big bank's
    report. ``started``: when the page began waiting."""
    bank, _membership = bank_for_user(request, bank_id)
    total = sum(n for _, _, n in status_counts(bank=bank))
    shown = dashboard_report(bank=bank, trajectories=total)
    agreement = shown.figures.agreement if shown.figures else None
    context = {"bank": bank, "total": total, "agreement": agreement, "min_cases": MIN_CASES}
    context |= _report_context(bank, shown, poll_started(request))
    charts = render_to_string(f"{TEMPLATE}#charts", context, request)
    out_of_band = context | {"oob": True}
    by_version = render_to_string(f"{TEMPLATE}#by_version", out_of_band, request)
    judge = render_to_string(f"{TEMPLATE}#judge", out_of_band, request)
    return HttpResponse(charts + by_version + judge)
