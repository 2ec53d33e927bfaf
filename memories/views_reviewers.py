"""HTML views for several reviewers on one queue (issue 13): the focus view's
presence heartbeat and the page that gives slices of the queue to reviewers.
The version check of decisions is in the item and queue views
(``memories.views``), which read the posted version with ``posted_version``."""

from __future__ import annotations

import re
import uuid

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods

from accounts.access import bank_for_user
from accounts.models import Role
from memories import selectors, services
from memories.models import ItemOrigin, MemoryItem, ReviewAssignment
from memories.selectors import collaboration as collab
from reasoningbank_site.errors import DomainError
from reasoningbank_site.text import counted
from reasoningbank_site.views_helpers import post_action

UUID_RE = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", re.IGNORECASE)


def posted_version(request, key: str = "seen_version") -> int | None:
    """The item version a form was rendered with (a hidden field), or None
    when the form did not send one (old pages, other clients: no check)."""
    raw = (request.POST.get(key) or "").strip()
    return int(raw) if raw.isdigit() and len(raw) < 10 else None


# --- presence ----------------------------------------------------------------------------


@login_required
@post_action
def review_presence(request, bank_id, item_id):
    """The focus view's heartbeat (every 15 s): a reviewer's beat records that
    they have the item open; every beat answers who else has it open."""
    bank, membership = bank_for_user(request, bank_id)
    try:
        item = selectors.item_for_bank(bank=bank, public_id=item_id)
    except MemoryItem.DoesNotExist:
        raise Http404("No such item.") from None
    if membership.has_role(Role.REVIEWER):
        services.review_presence_touch(item=item, user=request.user)
    others = collab.item_present_reviewers(items=[item], exclude_user=request.user).get(item.pk, [])
    context = {"bank": bank, "item": item, "reviewed_by": others, "beat": True}
    return render(request, "memories/presence.html", context)


# --- assignments -------------------------------------------------------------------------


class AssignmentForm(forms.Form):
    reviewer = forms.ModelChoiceField(queryset=None, empty_label="choose a reviewer")
    origin = forms.ChoiceField(required=False, choices=[("", "any origin"), *ItemOrigin.choices])
    verdict = forms.ChoiceField(
        required=False, choices=[("", "any verdict"), ("success", "success"), ("failure", "failure")]
    )
    agent = forms.CharField(required=False, max_length=200)
    tag = forms.CharField(required=False, max_length=40)
    items = forms.CharField(
        required=False,
        max_length=50_000,
        label="Listed items",
        widget=forms.Textarea(attrs={"rows": 2, "placeholder": "item ids or links, one a line (optional)"}),
        help_text="These items are in the slice too, whatever the criteria.",
    )
    note = forms.CharField(required=False, max_length=200)

    def __init__(self, *args, bank, agents=(), **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["reviewer"].queryset = collab.team_reviewers(bank=bank)
        self.fields["reviewer"].label_from_instance = lambda user: user.get_username()
        self.fields["agent"].widget = forms.Select(choices=[("", "any agent"), *((a, a) for a in agents)])

    def clean_items(self) -> list[uuid.UUID]:
        """One item a line, as its id or a link to it (an item link ends with the item's id)."""
        ids = []
        for line in (self.cleaned_data["items"] or "").splitlines():
            found = UUID_RE.findall(line)
            if found:
                ids.append(uuid.UUID(found[-1]))
            elif line.strip():
                raise forms.ValidationError(f"Not an item id or link: {line.strip()[:80]}")
        return ids


def _assignments_page(request, bank, membership, form):
    assignments = collab.bank_assignments(bank=bank)
    context = {
        "bank": bank,
        "membership": membership,
        "can_write": membership.has_role(Role.REVIEWER),
        "assignments": assignments,
        "form": form,
    }
    return render(request, "memories/assignments.html", context)


@login_required
@require_http_methods(["GET", "POST"])
def review_assignments(request, bank_id):
    """GET: who reviews which slice of the queue. POST (reviewers): give a slice to a reviewer."""
    role = Role.REVIEWER if request.method == "POST" else Role.VIEWER
    bank, membership = bank_for_user(request, bank_id, role=role)
    form = AssignmentForm(request.POST or None, bank=bank, agents=selectors.review_agents(bank=bank))
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        items = list(selectors.items_by_public_ids(bank=bank, public_ids=data["items"]))
        missing = len(set(data["items"])) - len(items)
        if missing:
            form.add_error(
                "items", f"{counted(missing, 'listed item')} {'is' if missing == 1 else 'are'} not in this bank."
            )
        else:
            try:
                services.review_assignment_create(
                    bank=bank,
                    reviewer=data["reviewer"],
                    author=request.user,
                    origin=data["origin"],
                    verdict=data["verdict"],
                    agent=data["agent"],
                    tag=data["tag"],
                    items=items,
                    note=data["note"],
                )
            except DomainError as exc:
                form.add_error(None, str(exc))
            else:
                messages.success(request, f"Assigned a slice of the queue to {data['reviewer'].get_username()}.")
                return redirect("memories:review_assignments", bank_id=bank.public_id)
    return _assignments_page(request, bank, membership, form)


@login_required
@post_action
def review_assignment_remove(request, bank_id, assignment_id):
    bank, _membership = bank_for_user(request, bank_id, role=Role.REVIEWER)
    assignment = (
        ReviewAssignment.objects.select_related("reviewer", "bank__team")
        .filter(bank=bank, public_id=assignment_id)
        .first()
    )
    if assignment is None:
        raise Http404("No such assignment.")
    services.review_assignment_delete(assignment=assignment, author=request.user)
    messages.success(request, f"Removed {assignment.reviewer.get_username()}'s slice ({assignment.describe()}).")
    return redirect("memories:review_assignments", bank_id=bank.public_id)
