"""Bearer-token authentication for the agent API. The token implies the bank."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ninja import Schema
from ninja.security import HttpBearer

from accounts.services import TokenUse, api_token_touch, api_token_use, hash_token
from reasoningbank_site.db import while_running
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
    ``Retry-After``. Sets ``request.api_token`` and ``request.bank``.

    ``early(request)``, when given, is work the endpoint will need that does
    not depend on who is asking (the retrieve API's query embedding): for a
    token this process accepted the last time it was presented, it runs in
    this thread while the token's statement runs in another
    (db.while_running), so the two overlap. It must not answer or raise:
    a refused token's request is answered as any other. An unknown or
    refused token still costs one statement and nothing else."""

    openapi_scheme = "bearer"
    _ACCEPTED_MAX = 10_000

    def __init__(self, scope: str | None, *, early: Callable[[Any], None] | None = None):
        # scope None: any live token of the bank (e.g. "which bank is this token for?").
        self.scope = scope
        self.early = early
        # Hashes of the tokens accepted the last time they were presented here (at most _ACCEPTED_MAX).
        self._accepted: dict[str, None] = {}
        super().__init__()

    def authenticate(self, request, token: str):
        raw = token.strip()
        seen = hash_token(raw) if self.early is not None else ""
        # The lookup and the rate count are one statement (api_token_use): one round trip per request.
        try:
            if seen in self._accepted:
                use = while_running(lambda: self.early(request), api_token_use, raw=raw, scope=self.scope)
            else:
                use = api_token_use(raw=raw, scope=self.scope)
            api_token = self._accepted_token(request, use)
        except Exception:
            self._accepted.pop(seen, None)
            raise
        if seen:
            if len(self._accepted) >= self._ACCEPTED_MAX:
                self._accepted.clear()
            self._accepted[seen] = None
        return api_token

    def _accepted_token(self, request, use: TokenUse):
        api_token = use.token
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
        decision = use.decision
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
