"""Reads for teams, banks and tokens."""

from __future__ import annotations

from django.db.models import Q, QuerySet
from django.utils import timezone

from accounts.models import ApiToken, Bank
from accounts.services import TOKEN_PREFIX, hash_token


def api_token_for_secret(*, raw: str) -> ApiToken | None:
    """The live token for a presented secret, with its bank and team, or None
    (unknown, revoked or expired — callers answer all three with 401)."""
    if not raw or not raw.startswith(TOKEN_PREFIX) or len(raw) > 200:
        return None
    token = (
        ApiToken.objects.select_related("bank", "bank__team")
        .filter(token_hash=hash_token(raw), revoked_at__isnull=True)
        .filter(Q(expires_at__isnull=True) | Q(expires_at__gt=timezone.now()))
        .first()
    )
    return token


def bank_find(*, ref: str) -> Bank:
    """A bank by ``slug`` or ``team-slug/bank-slug``. Raises Bank.DoesNotExist
    or Bank.MultipleObjectsReturned (a slug used by several teams)."""
    qs: QuerySet[Bank] = Bank.objects.select_related("team")
    if "/" in ref:
        team_slug, bank_slug = ref.split("/", 1)
        return qs.get(team__slug=team_slug, slug=bank_slug)
    return qs.get(slug=ref)
