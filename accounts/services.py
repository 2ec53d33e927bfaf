"""Writes for teams, banks and tokens."""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass
from datetime import datetime

from django.db import transaction
from django.utils import timezone

from accounts.models import ApiToken, Bank, Membership, Role, Scope, Team

TOKEN_PREFIX = "rb_"


def hash_token(raw: str) -> str:
    return hashlib.sha256(raw.encode()).hexdigest()


@dataclass(frozen=True)
class IssuedToken:
    token: ApiToken
    secret: str  # shown once; never stored


def api_token_create(
    *, bank: Bank, name: str, scopes: list[str], created_by=None, expires_at: datetime | None = None
) -> IssuedToken:
    """Create a token bound to ``bank``. Returns the model and the secret,
    which is not recoverable afterwards. Raises ValueError for an unknown or
    empty scope list or an empty name."""
    scopes = sorted(set(scopes))
    valid = set(Scope.values)
    if not scopes or not set(scopes) <= valid:
        raise ValueError(f"scopes must be a non-empty subset of {sorted(valid)}, got {scopes}")
    if not name.strip():
        raise ValueError("a token needs a name")
    secret_part = secrets.token_urlsafe(32)
    raw = f"{TOKEN_PREFIX}{secret_part}"
    token = ApiToken.objects.create(
        bank=bank,
        name=name.strip(),
        prefix=raw[:12],
        token_hash=hash_token(raw),
        scopes=scopes,
        created_by=created_by,
        expires_at=expires_at,
    )
    return IssuedToken(token=token, secret=raw)


def api_token_revoke(*, token: ApiToken) -> ApiToken:
    """Revoke ``token`` (idempotent: a revoked token keeps its first revocation time)."""
    if token.revoked_at is None:
        token.revoked_at = timezone.now()
        token.save(update_fields=["revoked_at"])
    return token


LAST_USED_RESOLUTION_SECONDS = 60


def api_token_touch(*, token: ApiToken) -> None:
    """Record use, writing at most once a minute per token so the hot path
    stays read-only."""
    now = timezone.now()
    if token.last_used_at and (now - token.last_used_at).total_seconds() < LAST_USED_RESOLUTION_SECONDS:
        return
    ApiToken.objects.filter(pk=token.pk).update(last_used_at=now)
    token.last_used_at = now


@transaction.atomic
def team_create(*, name: str, slug: str, owner) -> Team:
    """Create a team with ``owner`` as its first owner."""
    team = Team.objects.create(name=name, slug=slug)
    Membership.objects.create(team=team, user=owner, role=Role.OWNER)
    return team


def bank_create(*, team: Team, name: str, slug: str, **settings) -> Bank:
    """Create a bank in ``team`` with optional settings (field names of Bank)."""
    return Bank.objects.create(team=team, name=name, slug=slug, **settings)
