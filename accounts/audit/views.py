"""The audit log of a bank or a team: the filtered page and the CSV download."""

from __future__ import annotations

import csv
import json

from django.contrib.auth.decorators import login_required
from django.http import StreamingHttpResponse
from django.shortcuts import render
from django.urls import reverse

from accounts.access import bank_for_user, team_for_user
from accounts.audit.actions import audit_action_label
from accounts.teams import selectors
from accounts.teams.forms import AuditFilterForm
from reasoningbank_site.keyset import keyset_chunks
from reasoningbank_site.search_paging import CappedPaginator

AUDIT_PAGE_SIZE = 50


def _audit_filters(request) -> tuple[AuditFilterForm, selectors.AuditFilters]:
    form = AuditFilterForm(request.GET or None)
    if form.is_bound and form.is_valid():
        data = form.cleaned_data
        return form, selectors.AuditFilters(
            action=data["action"].strip(),
            actor=data["actor"].strip(),
            object=data["object"].strip(),
            since=data["since"],
            until=data["until"],
        )
    return form, selectors.AuditFilters()


def _audit_page(request, *, team, bank, template_context):
    form, filters = _audit_filters(request)
    events = selectors.audit_events(team=team, bank=bank, filters=filters)
    page = CappedPaginator(events, AUDIT_PAGE_SIZE).get_page(request.GET.get("page"))
    context = {
        **template_context,
        "form": form,
        "page": page,
        "actions": [(action, audit_action_label(action)) for action in selectors.audit_actions(team=team)],
        "filters": filters,
    }
    return render(request, "accounts/audit.html", context)


@login_required
def bank_audit(request, bank_id):
    bank, _me = bank_for_user(request, bank_id)
    csv_url = reverse("accounts:bank_audit_csv", kwargs={"bank_id": bank.public_id})
    return _audit_page(
        request,
        team=bank.team,
        bank=bank,
        template_context={"bank": bank, "scope_label": bank.name, "csv_url": csv_url},
    )


@login_required
def team_audit(request, team_id):
    team, _me = team_for_user(request, team_id)
    csv_url = reverse("accounts:team_audit_csv", kwargs={"team_id": team.public_id})
    return _audit_page(
        request, team=team, bank=None, template_context={"team": team, "scope_label": team.name, "csv_url": csv_url}
    )


class _Echo:
    def write(self, value):
        return value


CSV_HEADER = ["time", "action", "actor_type", "actor", "bank", "object_type", "object_id", "object", "before", "after"]


def _csv_cell(value) -> str:
    # Spreadsheets execute cells that start with these; prefix so they stay text.
    text = "" if value is None else str(value)
    return "'" + text if text[:1] in ("=", "+", "-", "@", "\t", "\r") else text


CSV_CHUNK = 500


def _csv_rows(events):
    writer = csv.writer(_Echo())
    yield writer.writerow(CSV_HEADER)
    for e in (e for rows in keyset_chunks(events, order=("-created_at", "-id"), chunk=CSV_CHUNK) for e in rows):
        actor_type = "user" if e.actor_user_id else ("token" if e.actor_token_id else "system")
        actor = e.actor_user.get_username() if e.actor_user_id else (e.actor_token.prefix if e.actor_token_id else "")
        yield writer.writerow(
            [
                _csv_cell(v)
                for v in (
                    e.created_at.isoformat(),
                    e.action,
                    actor_type,
                    actor,
                    e.bank.slug if e.bank_id else "",
                    e.object_type,
                    e.object_id,
                    e.object_repr,
                    json.dumps(e.before, default=str) if e.before is not None else "",
                    json.dumps(e.after, default=str) if e.after is not None else "",
                )
            ]
        )


def _csv_response(events, filename: str) -> StreamingHttpResponse:
    response = StreamingHttpResponse(_csv_rows(events), content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response


@login_required
def bank_audit_csv(request, bank_id):
    bank, _me = bank_for_user(request, bank_id)
    _, filters = _audit_filters(request)
    return _csv_response(
        selectors.audit_events(team=bank.team, bank=bank, filters=filters), f"audit-{bank.team.slug}-{bank.slug}.csv"
    )


@login_required
def team_audit_csv(request, team_id):
    team, _me = team_for_user(request, team_id)
    _, filters = _audit_filters(request)
    return _csv_response(selectors.audit_events(team=team, filters=filters), f"audit-{team.slug}.csv")
