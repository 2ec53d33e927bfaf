"""HTML views of a bank's memories (session auth): the review queue, the
focus view, the item list, one item, the retrieval playground.

Each view: check access (viewers read; reviewers write) → parse a form →
call a service → render the page, or its named partial for htmx."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.db.models import Q
from django.http import Http404, HttpResponse, StreamingHttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_http_methods

from accounts.access import bank_for_user
from accounts.models import Role
from memories import review_selectors as rs
from memories import selectors, services
from memories.forms import (
    BulkActionForm,
    ImportForm,
    ItemCreateForm,
    ItemEditForm,
    ItemListFilterForm,
    MergeForm,
    PlaygroundForm,
    RejectForm,
    ReviewFilterForm,
)
from memories.models import ItemStatus, MemoryItem
from reasoningbank_site.security import safe_next_url

PAGE_SIZE = 50


def _page(qs, number, size=PAGE_SIZE):
    return Paginator(qs, size).get_page(number)


def _querystring(request, drop=("page",)) -> str:
    params = request.GET.copy()
    for key in drop:
        params.pop(key, None)
    return params.urlencode()


def _safe_next(request, fallback: str) -> str:
    return safe_next_url(request, fallback)  # the one `next` reader (reasoningbank_site.security)


def _can_write(membership) -> bool:
    return membership.has_role(Role.REVIEWER)


# --- review queue ----------------------------------------------------------------


@login_required
@require_http_methods(["GET", "POST"])
def review(request, bank_id):
    """GET: proposed items, oldest first, filterable. POST: approve or reject
    the checked items (bulk), or one row's item (htmx answers with that row)."""
    if request.method == "POST":
        return _review_post(request, bank_id)
    bank, membership = bank_for_user(request, bank_id)
    form = ReviewFilterForm(request.GET or None, agents=rs.review_agents(bank=bank))
    page = _page(rs.review_queue(bank=bank, **(form.filters() if request.GET else {})), request.GET.get("page"))
    context = {
        "bank": bank,
        "membership": membership,
        "can_write": _can_write(membership),
        "form": form,
        "page": page,
        "qs": _querystring(request),
        "full_qs": request.GET.urlencode(),
    }
    template = (
        "memories/review.html#queue" if request.htmx and request.htmx.target == "queue" else "memories/review.html"
    )
    return render(request, template, context)


def _review_post(request, bank_id):
    bank, membership = bank_for_user(request, bank_id, role=Role.REVIEWER)
    form = BulkActionForm(request.POST)
    back = _safe_next(request, reverse("memories:review", kwargs={"bank_id": bank.public_id}))
    if not form.is_valid():
        message = "; ".join(e for errs in form.errors.values() for e in errs)
        if request.htmx:
            return _toast(message)
        messages.error(request, message)
        return redirect(back)
    action, reason = form.cleaned_data["action"], form.cleaned_data["reason"].strip()
    if action == "reject" and not reason:
        if request.htmx:
            return _toast("A rejection needs a reason.")
        messages.error(request, "A rejection needs a reason.")
        return redirect(back)
    items = list(rs.items_by_public_ids(bank=bank, public_ids=form.cleaned_data["items"]).order_by("created_at"))
    done, failed = [], []
    for item in items:
        try:
            if action == "approve":
                services.memory_item_approve(item=item, author=request.user)
            else:
                services.memory_item_reject(item=item, author=request.user, reason=reason)
            done.append(item)
        except ValueError as exc:
            failed.append((item, str(exc)))
    if request.htmx and request.POST.get("row"):
        item = items[0] if items else None
        if item is None:
            return _toast("That item no longer exists.")
        item.refresh_from_db()
        return render(
            request,
            "memories/review.html#row",
            {
                "bank": bank,
                "item": item,
                "can_write": True,
                "row_error": failed[0][1] if failed else "",
            },
        )
    verb = "approved" if action == "approve" else "rejected"
    if done:
        messages.success(request, f"{len(done)} item{'s' if len(done) != 1 else ''} {verb}.")
    for item, error in failed:
        messages.error(request, f"“{item.title}”: {error}")
    missing = len(form.cleaned_data["items"]) - len(items)
    if missing:
        messages.error(request, f"{missing} selected item{'s' if missing != 1 else ''} not found in this bank.")
    if request.htmx:
        response = HttpResponse(status=204)
        response["HX-Redirect"] = back
        return response
    return redirect(back)


def _toast(message: str) -> HttpResponse:
    """An htmx answer that changes nothing but shows ``message`` (status 200,
    because htmx 2 does not swap error statuses)."""
    response = render_to_toast(message)
    response["HX-Reswap"] = "none"
    return response


def render_to_toast(message: str) -> HttpResponse:
    from django.utils.html import format_html

    return HttpResponse(
        format_html('<div id="toast" role="status" aria-live="polite" hx-swap-oob="true">{}</div>', message)
    )


# --- one item (also the focus view of the queue) ---------------------------------------


def _item_or_404(bank, item_id) -> MemoryItem:
    try:
        return rs.item_for_bank(bank=bank, public_id=item_id)
    except MemoryItem.DoesNotExist:
        raise Http404("No such item.")


def _queue_neighbours(bank, item) -> tuple[MemoryItem | None, MemoryItem | None]:
    """The proposed items just before and after ``item`` in queue order."""
    queue = rs.review_queue(bank=bank).exclude(pk=item.pk)
    before = Q(created_at__lt=item.created_at) | Q(created_at=item.created_at, id__lt=item.id)
    after = Q(created_at__gt=item.created_at) | Q(created_at=item.created_at, id__gt=item.id)
    previous = queue.filter(before).order_by("-created_at", "-id").first()
    following = queue.filter(after).order_by("created_at", "id").first()
    return previous, following


def _item_context(request, bank, membership, item, *, focus: bool, edit_form=None, reject_form=None, merge_error=""):
    editing = edit_form is not None or (request.GET.get("edit") == "1" and _can_write(membership))
    if editing and edit_form is None:
        edit_form = ItemEditForm(instance=item)
    context = {
        "bank": bank,
        "membership": membership,
        "can_write": _can_write(membership),
        "item": item,
        "focus": focus,
        "editing": editing,
        "edit_form": edit_form,
        "reject_form": reject_form or RejectForm(),
        "merge_error": merge_error,
        "duplicates": rs.item_near_duplicates(item=item),
        "history": rs.item_history(item=item),
        "sources": rs.item_source_trajectory_ids(item=item),
    }
    if focus:
        context["previous"], context["following"] = _queue_neighbours(bank, item)
    return context


@login_required
@require_http_methods(["GET", "POST"])
def item_detail(request, bank_id, item_id):
    return _item_page(request, bank_id, item_id, focus=False)


@login_required
@require_http_methods(["GET", "POST"])
def review_focus(request, bank_id, item_id):
    return _item_page(request, bank_id, item_id, focus=True)


def _item_page(request, bank_id, item_id, *, focus: bool):
    role = Role.REVIEWER if request.method == "POST" else Role.VIEWER
    bank, membership = bank_for_user(request, bank_id, role=role)
    item = _item_or_404(bank, item_id)
    template = "memories/item_detail.html"
    if request.method == "GET":
        context = _item_context(request, bank, membership, item, focus=focus)
        return render(
            request, template + "#panel" if request.htmx and request.htmx.target == "item-panel" else template, context
        )

    action = request.POST.get("action", "")
    edit_form = reject_form = None
    merge_error = ""
    here = reverse(
        "memories:review_focus" if focus else "memories:item_detail",
        kwargs={"bank_id": bank.public_id, "item_id": item.public_id},
    )
    moved_on = False  # in the focus view, a decision moves to the next item
    try:
        if action == "edit":
            edit_form = ItemEditForm(request.POST, instance=MemoryItem(bank=bank))
            if edit_form.is_valid():
                data = edit_form.cleaned_data
                services.memory_item_edit(
                    item=item,
                    author=request.user,
                    title=data["title"],
                    description=data["description"],
                    content=data["content"],
                    note=data["note"],
                )
                messages.success(request, "Saved.")
                edit_form = None
        elif action == "approve":
            services.memory_item_approve(item=item, author=request.user)
            messages.success(request, f"Approved “{item.title}”.")
            moved_on = focus
        elif action == "reject":
            reject_form = RejectForm(request.POST)
            if reject_form.is_valid():
                services.memory_item_reject(item=item, author=request.user, reason=reject_form.cleaned_data["reason"])
                messages.success(request, f"Rejected “{item.title}”.")
                reject_form = None
                moved_on = focus
        elif action == "archive":
            services.memory_item_archive(item=item, author=request.user)
            messages.success(request, f"Archived “{item.title}”.")
        elif action == "merge":
            merge_form = MergeForm(request.POST)
            if not merge_form.is_valid():
                merge_error = "Pick an item to merge into."
            else:
                try:
                    into = rs.item_for_bank(bank=bank, public_id=merge_form.cleaned_data["into"])
                except MemoryItem.DoesNotExist:
                    merge_error = "That item is not in this bank."
                else:
                    into = services.memory_item_merge(
                        item=item, into=into, author=request.user, note=merge_form.cleaned_data["note"]
                    )
                    messages.success(request, f"Merged into “{into.title}”.")
                    moved_on = focus
        elif action == "keep":
            # Keep both: the suggestion was a false alarm; it is cleared and this one approved as its own lesson.
            services.memory_item_keep_both(item=item, author=request.user)
            messages.success(request, f"Kept both; approved “{item.title}”.")
            moved_on = focus
        else:
            messages.error(request, "Unknown action.")
    except ValueError as exc:
        messages.error(request, str(exc))

    if moved_on:
        _, following = _queue_neighbours(bank, item)
        target = (
            reverse("memories:review_focus", kwargs={"bank_id": bank.public_id, "item_id": following.public_id})
            if following
            else reverse("memories:review", kwargs={"bank_id": bank.public_id})
        )
        if request.htmx:
            response = HttpResponse(status=204)
            response["HX-Redirect"] = target
            return response
        return redirect(target)
    if edit_form is None and reject_form is None and not merge_error and not request.htmx:
        return redirect(here)
    item.refresh_from_db()
    context = _item_context(
        request,
        bank,
        membership,
        item,
        focus=focus,
        edit_form=edit_form,
        reject_form=reject_form,
        merge_error=merge_error,
    )
    return render(request, template + "#panel" if request.htmx else template, context)


# --- all items -----------------------------------------------------------------


@login_required
def items(request, bank_id):
    bank, membership = bank_for_user(request, bank_id)
    form = ItemListFilterForm(request.GET or None)
    form.is_valid()
    data = getattr(form, "cleaned_data", {})
    status = data.get("status") or ""
    page = _page(rs.item_list(bank=bank, status=status, text=data.get("q") or ""), request.GET.get("page"))
    counts = rs.item_status_counts(bank=bank)
    tabs = [("", "All", sum(counts.values()))] + [(value, label, counts[value]) for value, label in ItemStatus.choices]
    context = {
        "bank": bank,
        "membership": membership,
        "form": form,
        "page": page,
        "status": status,
        "tabs": tabs,
        "q": data.get("q") or "",
        "qs": _querystring(request),
    }
    template = (
        "memories/items.html#list" if request.htmx and request.htmx.target == "item-list" else "memories/items.html"
    )
    return render(request, template, context)


@login_required
@require_http_methods(["GET", "POST"])
def item_create(request, bank_id):
    """Write a memory by hand (the normal way to teach a bank while no LLM is configured)."""
    bank, membership = bank_for_user(request, bank_id, role=Role.REVIEWER)
    form = ItemCreateForm(request.POST or None, instance=MemoryItem(bank=bank))
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        try:
            item = services.memory_item_create(
                bank=bank,
                title=data["title"],
                description=data["description"],
                content=data["content"],
                author=request.user,
                status=ItemStatus.APPROVED if data["approve_now"] else ItemStatus.PROPOSED,
            )
        except ValueError as exc:
            form.add_error(None, str(exc))
        else:
            messages.success(request, f"Saved “{item.title}” as {item.get_status_display().lower()}.")
            return redirect("memories:item_detail", bank_id=bank.public_id, item_id=item.public_id)
    return render(request, "memories/item_new.html", {"bank": bank, "membership": membership, "form": form})


@login_required
def items_export(request, bank_id):
    """The bank's items as JSON Lines (a download; ``?status=approved`` narrows it)."""
    bank, _membership = bank_for_user(request, bank_id)
    status = request.GET.get("status", "")
    if status and status not in ItemStatus.values:
        status = ""
    import json

    rows = (
        json.dumps(row, ensure_ascii=False) + "\n" for row in selectors.memory_items_export(bank=bank, status=status)
    )
    response = StreamingHttpResponse(rows, content_type="application/x-ndjson; charset=utf-8")
    name = f"{bank.team.slug}-{bank.slug}-{status or 'all'}-memories.jsonl"
    response["Content-Disposition"] = f'attachment; filename="{name}"'
    return response


@login_required
@require_http_methods(["GET", "POST"])
def items_import(request, bank_id):
    """Upload items (another bank's export, or hand-written JSON) as proposed items for review."""
    bank, membership = bank_for_user(request, bank_id, role=Role.REVIEWER)
    form = ImportForm(request.POST or None, request.FILES or None)
    errors: list[str] = []
    if request.method == "POST" and form.is_valid():
        report = services.memory_items_import(bank=bank, author=request.user, records=form.cleaned_data["file"])
        errors = report.errors
        if not errors:
            skipped = f"; {len(report.duplicates)} already in this bank were skipped" if report.duplicates else ""
            messages.success(request, f"Imported {len(report.created)} item(s) as proposed{skipped}. Review them here.")
            return redirect(reverse("memories:review", kwargs={"bank_id": bank.public_id}) + "?origin=import")
    context = {
        "bank": bank,
        "membership": membership,
        "form": form,
        "errors": errors[:50],
        "more_errors": max(0, len(errors) - 50),
    }
    return render(request, "memories/items_import.html", context)


# --- playground -----------------------------------------------------------------


@login_required
def playground(request, bank_id):
    bank, membership = bank_for_user(request, bank_id)
    form = PlaygroundForm(request.GET if "q" in request.GET else None)
    result = error = None
    if form.is_bound and form.is_valid():
        try:
            result = services.retrieval_preview(bank=bank, query=form.cleaned_data["q"], k=form.cleaned_data.get("k"))
        except ValueError as exc:
            error = str(exc)
    context = {"bank": bank, "membership": membership, "form": form, "result": result, "error": error}
    template = (
        "memories/playground.html#results"
        if request.htmx and request.htmx.target == "results"
        else "memories/playground.html"
    )
    return render(request, template, context)
