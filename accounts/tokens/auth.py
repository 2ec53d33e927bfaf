"""Bearer-token authentication for the agent API, everything an API request runs for it: the live token
for a presented secret (only a SHA-256 of a secret is stored), its last use, and the per-minute count
behind the rate limit (one plain upsert per request: the ORM has no atomic upsert-and-return). The token
implies the bank."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from django.db import connection
from django.utils import timezone
from ninja import Schema
from ninja.security import HttpBearer

from accounts.models import ApiToken
from reasoningbank_site.errors import Forbidden, NotAuthenticated, RateLimited


class ErrorOut(Schema):
    """Every agent-API error: a sentence for people, a code for programs."""

    detail: str
    code: str
    errors: list[dict[str, Any]] | None = None


# What any token-authenticated endpoint may answer besides success: bad JSON,
# no/unknown token, wrong scope or archived bank, invalid input, rate limit.
_COMMON_ERRORS = (400, 401, 403, 422, 429)


def api_responses(ok: dict, *extra_errors: int) -> dict:
    """An endpoint's ``response=`` map: its success schemas plus ErrorOut for
    the common error statuses and ``extra_errors`` (404, 413, 503…), so the
    OpenAPI document lists every status an agent can receive."""
    return {**ok, **{status: ErrorOut for status in sorted({*_COMMON_ERRORS, *extra_errors})}}


class TokenAuth(HttpBearer):
    """``Authorization: Bearer rb_…``. Unknown, revoked or expired → 401;
    a live token without ``scope`` → 403; an archived bank → 403 ``bank_archived``;
    over the bank's ``rate_limit_per_minute`` → 429 ``rate_limited`` with
    ``Retry-After``. Sets ``request.api_token`` and ``request.bank``. The
    token, its bank and team are one ORM query; a token that passes the
    checks is counted by one upsert (api_token_hit). A refused token (wrong
    scope, archived bank) is not counted."""

    openapi_scheme = "bearer"

    def __init__(self, scope: str | None):
        # scope None: any live token of the bank (e.g. "which bank is this token for?").
        self.scope = scope
        super().__init__()

    def authenticate(self, request, token: str):
        api_token = api_token_for_secret(raw=token.strip())
        if api_token is None:
            raise NotAuthenticated("The API token is unknown, revoked or expired.")
        if self.scope is not None and not api_token.has_scope(self.scope):
            raise Forbidden(
                f"This token lacks the '{self.scope}' scope (it has: {', '.join(api_token.scopes) or 'none'}).",
                code="missing_scope",
            )
        if api_token.bank.is_archived:
            raise Forbidden(
                "This bank is archived: it serves no memories and accepts no trajectories.", code="bank_archived"
            )
        decision = api_token_hit(token=api_token, limit=api_token.bank.rate_limit_per_minute)
        if not decision.allowed:
            raise RateLimited(
                f"Rate limit of {decision.limit} requests per minute per token exceeded; "
                f"retry in {decision.retry_after} s.",
                retry_after=decision.retry_after,
            )
        api_token_touch(token=api_token)
        request.api_token = api_token
        request.bank = api_token.bank
        return api_token


def api_token_for_secret(*, raw: str) -> ApiToken | None:
    """The live token for a presented secret, with its bank and team, or None
    (unknown, revoked or expired — callers answer all three with 401)."""
    if not raw or not raw.startswith(TOKEN_PREFIX) or len(raw) > 200:
        return None
    # token_hash is unique: the row, if any, is read by it alone (no ORDER BY or LIMIT to compile: this
    # runs on every API request), and revoked or expired is decided from the row.
    token = next(iter(ApiToken.objects.select_related("bank__team").filter(token_hash=hash_token(raw))), None)
    if token is None or token.revoked_at is not None:
        return None
    if token.expires_at is not None and token.expires_at <= timezone.now():
        return None
    return token


TOKEN_PREFIX = "rb_"


LAST_USED_RESOLUTION_SECONDS = 60


def hash_token(raw: str) -> str:
    """The stored form of a secret (token or invitation link)."""
    return hashlib.sha256(raw.encode()).hexdigest()


def api_token_touch(*, token: ApiToken) -> None:
    """Record use, writing at most once a minute per token so the hot path
    stays cheap."""
    now = timezone.now()
    if token.last_used_at and (now - token.last_used_at).total_seconds() < LAST_USED_RESOLUTION_SECONDS:
        return
    ApiToken.objects.filter(pk=token.pk).update(last_used_at=now)
    token.last_used_at = now


@dataclass(frozen=True)
class RateDecision:
    allowed: bool
    count: int
    limit: int  # 0: no limit
    retry_after: int  # seconds until the window ends


RATE_WINDOW_SECONDS = 60


def _window(now: datetime | None) -> tuple[int, int, datetime]:
    """(now's epoch, its window's start epoch, the window start) of the fixed one-minute window."""
    now = now or timezone.now()
    epoch = int(now.timestamp())
    window_start_epoch = epoch - epoch % RATE_WINDOW_SECONDS
    return epoch, window_start_epoch, datetime.fromtimestamp(window_start_epoch, tz=UTC)


def _decision(*, count: int, limit: int, epoch: int, window_start_epoch: int) -> RateDecision:
    retry_after = max(1, window_start_epoch + RATE_WINDOW_SECONDS - epoch)
    allowed = limit <= 0 or count <= limit
    return RateDecision(allowed=allowed, count=count, limit=limit, retry_after=retry_after)


# The set_config makes the upsert's own commit return without waiting for the
# WAL flush (synchronous_commit off for its transaction only, in the statement
# itself: no BEGIN, SET or COMMIT round trips): a per-minute counter is not
# worth a disk flush on every request's path.
_HIT_SQL = (
    "INSERT INTO accounts_tokenusage (token_id, window_start, count) "
    "SELECT %s, %s, 1 FROM (SELECT set_config('synchronous_commit', 'off', true)) AS async_commit "
    "ON CONFLICT (token_id, window_start) DO UPDATE SET count = accounts_tokenusage.count + 1 "
    "RETURNING count"
)


def api_token_hit(*, token: ApiToken, limit: int, now: datetime | None = None) -> RateDecision:
    """Count one request of ``token`` in the current fixed one-minute window
    (one upsert, atomic under concurrency) and say whether it is within
    ``limit`` requests per minute (0 means unlimited). Requests over the
    limit are counted too, so request counts show what agents attempted."""
    epoch, window_start_epoch, window_start = _window(now)
    with connection.cursor() as cur:
        cur.execute(_HIT_SQL, [token.pk, window_start])
        (count,) = cur.fetchone()
    return _decision(count=count, limit=limit, epoch=epoch, window_start_epoch=window_start_epoch)
