"""Bearer-token authentication for the agent API. The token implies the bank."""

from __future__ import annotations

from typing import Any

from ninja import Schema
from ninja.security import HttpBearer

from accounts.teams.selectors import api_token_for_secret
from accounts.tokens.services import api_token_touch
from accounts.tokens.usage import api_token_hit
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
