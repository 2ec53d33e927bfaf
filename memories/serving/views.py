"""The retrieval playground: what a query would retrieve from production, without logging a retrieval."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.shortcuts import render

from accounts.access import bank_for_user
from memories.review.forms import PlaygroundForm
from memories.serving import served_release
from memories.serving.preview import retrieval_preview
from reasoningbank_site.errors import DomainError
from reasoningbank_site.views_helpers import template_for


@login_required
def playground(request, bank_id):
    bank, membership = bank_for_user(request, bank_id)
    form = PlaygroundForm(request.GET if "q" in request.GET else None)
    result = error = filters = None
    if form.is_bound and form.is_valid():
        filters = form.filters()
        served = served_release(bank=bank)  # production, as every agent outside a canary or the holdout gets
        try:
            result = retrieval_preview(
                bank=bank,
                query=form.cleaned_data["q"],
                k=form.cleaned_data.get("k"),
                filters=filters,
                release=served.searched,
            )
            result.release = served.number
        except DomainError as exc:
            error = str(exc)
    context = {
        "bank": bank,
        "membership": membership,
        "form": form,
        "result": result,
        "error": error,
        "filters": filters,
    }
    return render(request, template_for(request, "memories/playground.html", {"results": "results"}), context)
