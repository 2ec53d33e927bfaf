"""Reads for teams, banks, tokens, invitations and the audit log."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime, time, timedelta

from django.db.models import Count, Prefetch, Q, QuerySet, Sum
from django.utils import timezone

from accounts.models import ApiToken, AuditEvent, Bank, Invitation, Membership, Team


def bank_find(*, ref: str) -> Bank:
    """A bank by ``slug`` or ``team-slug/bank-slug``. Raises Bank.DoesNotExist
    or Bank.MultipleObjectsReturned (a slug used by several teams)."""
    qs: QuerySet[Bank] = Bank.objects.select_related("team")
    if "/" in ref:
        team_slug, bank_slug = ref.split("/", 1)
        return qs.get(team__slug=team_slug, slug=bank_slug)
    return qs.get(slug=ref)


def memberships_for_user(*, user) -> list[Membership]:
    """The user's memberships with their team and the team's banks (active
    first), in two queries."""
    return list(
        Membership.objects.filter(user=user)
        .select_related("team")
        .prefetch_related(Prefetch("team__banks", queryset=Bank.objects.order_by("archived_at", "name")))
        .order_by("team__name")
    )


def team_members(*, team: Team) -> list[Membership]:
    return list(team.memberships.select_related("user").order_by("user__username"))


def team_invitations(*, team: Team, pending_only: bool = True) -> list[Invitation]:
    qs = team.invitations.select_related("invited_by").order_by("-created_at")
    if pending_only:
        qs = qs.pending()
    return list(qs)


def team_banks(*, team: Team) -> list[Bank]:
    return list(
        team.banks.annotate(token_count=Count("tokens", filter=Q(tokens__revoked_at__isnull=True))).order_by(
            "archived_at", "name"
        )
    )


def bank_tokens(*, bank: Bank) -> list[ApiToken]:
    """The bank's tokens, newest first, each annotated with
    ``requests_total``, ``requests_24h`` and ``requests_this_minute``
    (summed from the rate limiter's per-minute counters), in one query."""
    now = timezone.now()
    minute = now.replace(second=0, microsecond=0)
    return list(
        bank.tokens.select_related("created_by")
        .annotate(
            requests_total=Sum("usage__count", default=0),
            requests_24h=Sum("usage__count", filter=Q(usage__window_start__gte=now - timedelta(hours=24)), default=0),
            requests_this_minute=Sum("usage__count", filter=Q(usage__window_start=minute), default=0),
        )
        .order_by("-created_at", "-id")
    )


@dataclass
class AuditFilters:
    action: str = ""
    actor: str = ""  # a username or a token prefix
    object: str = ""  # an object id or type, or text of its name
    since: date | None = None
    until: date | None = None


def audit_events(*, team: Team, bank: Bank | None = None, filters: AuditFilters | None = None) -> QuerySet[AuditEvent]:
    """Audit events of a team (or only one of its banks), newest first,
    narrowed by ``filters``; dates are inclusive days in the server's zone."""
    qs = AuditEvent.objects.filter(team=team).select_related("actor_user", "actor_token", "bank")
    if bank is not None:
        qs = qs.filter(bank=bank)
    f = filters or AuditFilters()
    if f.action:
        qs = qs.filter(action=f.action) if "." in f.action else qs.filter(action__startswith=f.action + ".")
    if f.actor:
        qs = qs.filter(Q(actor_user__username__iexact=f.actor) | Q(actor_token__prefix__startswith=f.actor))
    if f.object:
        qs = qs.filter(
            Q(object_id__iexact=f.object) | Q(object_type__iexact=f.object) | Q(object_repr__icontains=f.object)
        )
    tz = timezone.get_current_timezone()
    if f.since:
        qs = qs.filter(created_at__gte=datetime.combine(f.since, time.min, tzinfo=tz))
    if f.until:
        qs = qs.filter(created_at__lt=datetime.combine(f.until + timedelta(days=1), time.min, tzinfo=tz))
    return qs.order_by("-created_at", "-id")


def audit_actions(*, team: Team) -> list[str]:
    return list(AuditEvent.objects.filter(team=team).order_by("action").values_list("action", flat=True).distinct())
