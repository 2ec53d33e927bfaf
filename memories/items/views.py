"""All of a bank's items, by status and text, and writing one by hand."""

from __future__ import annotations

from functools import partial

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods

from accounts.access import bank_for_user
from accounts.models import Role
from memories.items.lifecycle import lifecycle_annotations, lifecycle_of
from memories.items.models import ItemStatus, MemoryItem, SupportKind
from memories.items.services import memory_item_create
from memories.review.forms import ItemCreateForm, ItemListFilterForm
from memories.review.policy import decides_alone
from memories.review.selectors import item_list, item_status_counts
from memories.serving import served_release
from reasoningbank_site.errors import DomainError
from reasoningbank_site.search_paging import SearchPaginator
from reasoningbank_site.views_helpers import reverse_each, template_for

PAGE_SIZE = 50


def _status_tabs(bank) -> list[tuple[str, str, int]]:
    counts = item_status_counts(bank=bank)
    return [("", "All", sum(counts.values()))] + [(value, label, counts[value]) for value, label in ItemStatus.choices]


@login_required
def items(request, bank_id):
    bank, membership = bank_for_user(request, bank_id)
    form = ItemListFilterForm(request.GET or None)
    form.is_valid()
    data = getattr(form, "cleaned_data", {})
    status = data.get("status") or ""
    listed = item_list(bank=bank, status=status, text=data.get("q") or "")
    listed = listed.annotate(**lifecycle_annotations(bank=bank))  # each row's state, in the list's query
    page = SearchPaginator(listed, PAGE_SIZE).get_page(request.GET.get("page"))
    detail = reverse_each("memories:item_detail", "item_id", bank_id=bank.public_id)
    production = served_release(bank=bank).number
    for item in page.object_list:
        item.detail_url = detail(item.public_id)
        item.lifecycle = lifecycle_of(item, production=production)
    context = {
        "bank": bank,
        "membership": membership,
        "form": form,
        "page": page,
        "status": status,
        "tabs": partial(_status_tabs, bank),  # counted only when rendered: not for the htmx list partial
        "q": data.get("q") or "",
        "production": production,
    }
    return render(request, template_for(request, "memories/items.html", {"item-list": "list"}), context)


@login_required
@require_http_methods(["GET", "POST"])
def item_create(request, bank_id):
    """Write a memory by hand (the normal way to teach a bank while no LLM is configured)."""
    bank, membership = bank_for_user(request, bank_id, role=Role.REVIEWER)
    form = ItemCreateForm(request.POST or None, instance=MemoryItem(bank=bank))
    if not decides_alone(bank=bank, user=request.user):
        form.fields["approve_now"].label = "Approve now (your approve counts as its first decision)"
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        try:
            item = memory_item_create(
                bank=bank,
                title=data["title"],
                description=data["description"],
                content=data["content"],
                tags=data["tags"],
                author=request.user,
                status=ItemStatus.APPROVED if data["approve_now"] else ItemStatus.PROPOSED,
            )
        except DomainError as exc:
            form.add_error(None, str(exc))
        else:
            support = getattr(item, "supported_by", None)
            if support is not None:
                # The one near-duplicate check: the bank holds this lesson already; the text is kept there.
                held = "refused" if support.kind == SupportKind.REPEATED else "holds"
                messages.warning(
                    request,
                    f"Not saved as a new item: this bank {held} “{item.title}” already (similarity "
                    f"{support.similarity:.2f}). Your text is recorded there as seen again.",
                )
            elif data["approve_now"] and item.status == ItemStatus.PROPOSED:
                # A reviewer under a policy of several decisions: her approve is the item's first vote.
                messages.success(
                    request,
                    f"Saved “{item.title}” as proposed, with your approve as its first decision: "
                    "this bank's review policy needs more before it is served.",
                )
            else:
                messages.success(request, f"Saved “{item.title}” as {item.get_status_display().lower()}.")
            return redirect("memories:item_detail", bank_id=bank.public_id, item_id=item.public_id)
    return render(request, "memories/item_new.html", {"bank": bank, "membership": membership, "form": form})
