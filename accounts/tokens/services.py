"""API tokens: issuing (the secret is shown once), revoking, and recording
use. Only a SHA-256 of a secret is ever stored (``hash_token``)."""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from datetime import datetime

from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone

from accounts.audit.actions import AuditAction
from accounts.audit.services import audit_record
from accounts.errors import AccountsInvalid
from accounts.models import ApiToken, Bank, Scope, validate_token_expiry
from accounts.tokens.auth import TOKEN_PREFIX, hash_token


@dataclass(frozen=True)
class IssuedToken:
    token: ApiToken
    secret: str  # shown once; never stored


@transaction.atomic
def api_token_create(
    *, bank: Bank, name: str, scopes: list[str], created_by=None, expires_at: datetime | None = None
) -> IssuedToken:
    """Create a token bound to ``bank`` (audited, actor ``created_by``).
    Returns the model and the secret, which is not recoverable afterwards.
    Raises AccountsInvalid (an Invalid) for an unknown or empty scope list,
    an empty name or an expiry in the past."""
    scopes = sorted(set(scopes))
    valid = set(Scope.values)
    if not scopes or not set(scopes) <= valid:
        raise AccountsInvalid(f"scopes must be a non-empty subset of {sorted(valid)}, got {scopes}")
    if not name.strip():
        raise AccountsInvalid("a token needs a name")
    try:
        validate_token_expiry(expires_at)
    except ValidationError as exc:
        raise AccountsInvalid(exc.messages[0]) from None
    raw = f"{TOKEN_PREFIX}{secrets.token_urlsafe(32)}"
    token = ApiToken.objects.create(
        bank=bank,
        name=name.strip(),
        prefix=raw[:12],
        token_hash=hash_token(raw),
        scopes=scopes,
        created_by=created_by,
        expires_at=expires_at,
    )
    audit_record(
        action=AuditAction.TOKEN_CREATE,
        bank=bank,
        user=created_by,
        obj=token,
        after={"name": token.name, "prefix": token.prefix, "scopes": scopes, "expires_at": expires_at},
    )
    return IssuedToken(token=token, secret=raw)


@transaction.atomic
def api_token_revoke(*, token: ApiToken, actor=None) -> ApiToken:
    """Revoke ``token`` (idempotent: a revoked token keeps its first
    revocation time, and only the first revocation is audited)."""
    if token.revoked_at is None:
        token.revoked_at = timezone.now()
        token.save(update_fields=["revoked_at"])
        audit_record(
            action=AuditAction.TOKEN_REVOKE,
            bank=token.bank,
            user=actor,
            obj=token,
            before={"revoked_at": None},
            after={"revoked_at": token.revoked_at},
        )
    return token
