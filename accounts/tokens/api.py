"""Agent API: what a token is (its bank, scopes, limits). Mounted on the one
NinjaAPI in reasoningbank_site/api.py."""

from __future__ import annotations

from datetime import datetime
from uuid import UUID

from ninja import Router, Schema

from accounts.tokens.auth import TokenAuth, api_responses

router = Router(tags=["tokens"])


class TokenOut(Schema):
    prefix: str
    name: str
    scopes: list[str]
    expires_at: datetime | None
    bank_id: UUID
    bank: str
    team: str
    retrieval_mode: str
    top_k: int
    rate_limit_per_minute: int


@router.get(
    "/token",
    response=api_responses({200: TokenOut}),
    auth=TokenAuth(scope=None),
    summary="Describe the calling token",
    description="The bank this token is bound to, its scopes and the bank's limits. Any live token may call it.",
)
def token_info(request):
    token, bank = request.api_token, request.bank
    return TokenOut(
        prefix=token.prefix,
        name=token.name,
        scopes=token.scopes,
        expires_at=token.expires_at,
        bank_id=bank.public_id,
        bank=bank.slug,
        team=bank.team.slug,
        retrieval_mode=bank.retrieval_mode,
        top_k=bank.top_k,
        rate_limit_per_minute=bank.rate_limit_per_minute,
    )
