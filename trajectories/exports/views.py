"""A bank's Export page and its downloads (session auth; viewers may
download, as they may read every page they come from): trajectories as OpenAI
chat fine-tuning JSONL, the human-labelled judge evaluation set, and the
approved memories in the `reasoning-bank` library's format. Each download
streams JSON Lines from the database as an attachment (never rendered as
HTML); the export API (trajectories.exports.api) serves the same rows."""

from __future__ import annotations

import json
from collections.abc import Iterable

from django.contrib.auth.decorators import login_required
from django.db.models import Exists, OuterRef
from django.http import StreamingHttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from accounts.access import bank_for_user
from accounts.models import Bank
from memories.items.models import ItemStatus
from memories.review.selectors import item_status_counts
from memories.serving.export import served_items_export_reasoning_bank
from memories.serving.lists import served_items
from reasoningbank_site import search_paging
from reasoningbank_site.replica import reads_from_replica
from trajectories.exports import datasets
from trajectories.models import Judgment, JudgmentSource, Trajectory


def jsonl_response(rows: Iterable[dict], filename: str) -> StreamingHttpResponse:
    """``rows`` streamed as a JSON Lines attachment named ``filename``."""
    lines = (json.dumps(row, ensure_ascii=False) + "\n" for row in rows)
    response = StreamingHttpResponse(lines, content_type="application/x-ndjson; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    response["X-Content-Type-Options"] = "nosniff"
    return response


def export_name(bank: Bank, what: str) -> str:
    return f"{bank.team.slug}-{bank.slug}-{what}.jsonl"


def chat_verdict(value: str | None) -> str:
    """The ``verdict`` of a chat export request: success unless failure or all is asked for."""
    return value if value in datasets.CHAT_VERDICTS else "success"


# The Export page counts each file's rows up to this many: past it, the page says "10,000+" (a bounded read,
# however big the bank; the exact size of a file that large is not what the choice of a file needs).
def capped_count(qs) -> str:
    """``qs``'s row count as shown, reading at most the lists' cap + 1 rows: "10,000+" past the cap."""
    n, capped = search_paging.capped_count(qs)
    return f"{n:,}+" if capped else f"{n:,}"


def _counts(bank: Bank) -> dict:
    runs = Trajectory.objects.filter(bank=bank, raw__isnull=False)
    # Driven from the human judgments (a few per cent of the runs), not a probe of every run of the bank.
    labelled = (
        Judgment.objects.filter(source=JudgmentSource.HUMAN, trajectory__bank_id=bank.pk)
        .filter(Exists(Judgment.objects.filter(trajectory=OuterRef("trajectory"), source=JudgmentSource.LLM)))
        .values("trajectory")
        .distinct()
    )
    labelled_shown = capped_count(labelled)
    served = served_items(bank=bank)
    # What is served, up to the cap too: counting every served item with its serving checks grew with the bank.
    served_shown = capped_count(served.items)
    return {
        "success": capped_count(runs.filter(verdict="success")),
        "failure": capped_count(runs.filter(verdict="failure")),
        "all": capped_count(runs.filter(verdict__in=["success", "failure"])),
        "labelled": labelled_shown,
        "labelled_one": labelled_shown == "1",
        "approved": item_status_counts(bank=bank)[ItemStatus.APPROVED],
        "served": served_shown,
        "served_one": served_shown == "1",
        "release": served.number,
    }


@login_required
@require_GET
@reads_from_replica
def export_page(request, bank_id):
    bank, membership = bank_for_user(request, bank_id)
    context = {"bank": bank, "membership": membership, "counts": _counts(bank)}
    return render(request, "trajectories/export.html", context)


@login_required
@require_GET
@reads_from_replica
def export_chat(request, bank_id):
    bank, _membership = bank_for_user(request, bank_id)
    verdict = chat_verdict(request.GET.get("verdict"))
    metadata = request.GET.get("metadata") != "0"
    rows = datasets.chat_finetune_rows(bank=bank, verdict=verdict, metadata=metadata)
    return jsonl_response(rows, export_name(bank, f"chat-{verdict}"))


@login_required
@require_GET
@reads_from_replica
def export_judge_eval(request, bank_id):
    bank, _membership = bank_for_user(request, bank_id)
    rows = datasets.judge_eval_rows(bank=bank, with_input=request.GET.get("input") != "0")
    return jsonl_response(rows, export_name(bank, "judge-eval"))


@login_required
@require_GET
@reads_from_replica
def export_reasoning_bank(request, bank_id):
    bank, _membership = bank_for_user(request, bank_id)
    rows = served_items_export_reasoning_bank(bank=bank)
    return jsonl_response(rows, export_name(bank, "reasoning-bank"))
