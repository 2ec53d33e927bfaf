"""A bank's items out as JSON Lines or as Agent Skills / AGENTS.md files,
and in (another bank's export, or hand-written JSON) as proposed items for review."""

from __future__ import annotations

import json

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, StreamingHttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_http_methods

from accounts.access import bank_for_user
from accounts.models import Role
from memories.items.export import memory_items_export
from memories.items.imports import memory_items_import
from memories.items.models import ItemStatus
from memories.review.forms import ImportForm
from memories.serving import skill_files
from memories.serving.skills import bank_lessons
from reasoningbank_site.text import counted

# The skill downloads' URLs name the file (so a saved link says what it is), each one export format.
SKILL_FILES = {"SKILL.md": "skill", "skill.zip": "zip", "agents-section.md": "agents"}


@login_required
def items_export(request, bank_id):
    """A full copy of the bank's items as JSON Lines, not what it serves (a download whose name says
    so; ``?status=approved`` narrows it)."""
    bank, _membership = bank_for_user(request, bank_id)
    status = request.GET.get("status", "")
    if status and status not in ItemStatus.values:
        status = ""
    rows = (json.dumps(row, ensure_ascii=False) + "\n" for row in memory_items_export(bank=bank, status=status))
    response = StreamingHttpResponse(rows, content_type="application/x-ndjson; charset=utf-8")
    name = f"{bank.team.slug}-{bank.slug}-{status or 'all'}-memories-full-copy-not-served.jsonl"
    response["Content-Disposition"] = f'attachment; filename="{name}"'
    return response


@login_required
@require_http_methods(["GET"])
def items_skills(request, bank_id, filename):
    """What the bank serves as files: ``SKILL.md``, the skill folder zipped
    (``skill.zip``, holding ``<name>/SKILL.md``) or the AGENTS.md section
    (``agents-section.md``). Viewers may download, as they read every item."""
    bank, _membership = bank_for_user(request, bank_id)
    fmt = SKILL_FILES.get(filename)
    if fmt is None:
        raise Http404("No such export.")
    lessons = bank_lessons(bank=bank)
    return skill_files.export_response(lessons, fmt=fmt, name=skill_files.skill_name(lessons))


@login_required
@require_http_methods(["GET", "POST"])
def items_import(request, bank_id):
    """Upload items (another bank's export, or hand-written JSON) as proposed items for review."""
    bank, membership = bank_for_user(request, bank_id, role=Role.REVIEWER)
    form = ImportForm(request.POST or None, request.FILES or None)
    errors: list[str] = []
    if request.method == "POST" and form.is_valid():
        report = memory_items_import(bank=bank, author=request.user, records=form.cleaned_data["file"])
        errors = report.errors
        if not errors:
            skipped = f"; {len(report.duplicates)} already in this bank were skipped" if report.duplicates else ""
            if report.seen_again:
                skipped += f"; {counted(len(report.seen_again), 'near-duplicate')} of items it holds recorded there as seen again"
            messages.success(
                request, f"Imported {counted(len(report.created), 'item')} as proposed{skipped}. Review them here."
            )
            return redirect(reverse("memories:review", kwargs={"bank_id": bank.public_id}) + "?origin=import")
    context = {
        "bank": bank,
        "membership": membership,
        "form": form,
        "errors": errors[:50],
        "more_errors": max(0, len(errors) - 50),
    }
    return render(request, "memories/items_import.html", context)
