"""Per-token daily ingest quotas (``Bank.ingest_quota_per_day``), besides the
per-minute rate limit: the trajectories one token may send a bank per UTC
day, by the REST API or as OTLP traces (trajectories.otlp.buffer). The bank
comes with the token, so a bank without a quota costs no query."""

from __future__ import annotations

from datetime import UTC, datetime, time, timedelta

from django.utils import timezone

from accounts.models import ApiToken, Bank
from reasoningbank_site.errors import RateLimited
from trajectories.models import Trajectory


def _today(now):
    return datetime.combine(now.astimezone(UTC).date(), time(), tzinfo=UTC)


def ingest_quota_left(*, bank: Bank, token: ApiToken | None) -> int | None:
    """How many more trajectories ``token`` may send its bank today (0 when the quota is spent); None: no limit."""
    quota = bank.ingest_quota_per_day
    if token is None or quota is None:
        return None
    sent = Trajectory.objects.filter(bank_id=bank.pk, token=token, created_at__gte=_today(timezone.now())).count()
    return max(quota - sent, 0)


def ingest_quota_check(*, bank: Bank, token: ApiToken | None, n: int = 1, batch: bool = False) -> None:
    """Raise RateLimited ``ingest_quota_exceeded`` (Retry-After: until 00:00 UTC) when ``n`` more trajectories
    would take ``token`` past its bank's daily quota (``batch``: the message says they are a batch's new ones;
    a repeated external_id is not new and is never counted). No token (a human's upload) or no quota: no limit."""
    quota = bank.ingest_quota_per_day
    if token is None or quota is None or n <= 0:
        return
    now = timezone.now()
    today = _today(now)
    sent = Trajectory.objects.filter(bank_id=bank.pk, token=token, created_at__gte=today).count()
    if sent + n > quota:
        reset = today + timedelta(days=1)
        raise RateLimited(
            f"This token's daily ingest quota is {quota} trajectories and it sent {sent} today"
            f"{f'; this batch has {n} new' if batch else ''}. Nothing was stored; the quota resets at 00:00 UTC.",
            code="ingest_quota_exceeded",
            retry_after=max(1, int((reset - now).total_seconds())),
        )
