"""Token usage: the per-minute request counter behind the rate limiter (one
raw-SQL upsert per API request) and its compaction into per-day rows. Raw SQL
here because the ORM has no atomic upsert-and-return."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from django.db import connection
from django.utils import timezone

from accounts.models import ApiToken


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


USAGE_MINUTE_RETENTION_HOURS = 48


def token_usage_compact(*, older_than_hours: int = USAGE_MINUTE_RETENTION_HOURS) -> int:
    """Fold per-minute usage rows older than ``older_than_hours`` into one row
    per token per UTC day (the row at the day's first minute), so the table
    stays small while all-time request counts stay exact. The last 48 hours
    keep their minutes, which the rate limiter and the 24 h count read.
    One statement, so it is atomic and safe to run concurrently with
    ``api_token_hit`` and with itself; running it again changes nothing.
    Returns how many minute rows were folded away."""
    cutoff = timezone.now() - timedelta(hours=older_than_hours)
    with connection.cursor() as cur:
        cur.execute(
            """
            WITH folded AS (
                DELETE FROM accounts_tokenusage
                WHERE window_start < %s
                  AND window_start <> date_trunc('day', window_start AT TIME ZONE 'UTC') AT TIME ZONE 'UTC'
                RETURNING token_id, date_trunc('day', window_start AT TIME ZONE 'UTC') AT TIME ZONE 'UTC' AS day, count
            ), per_day AS (
                SELECT token_id, day, sum(count) AS count, count(*) AS n FROM folded GROUP BY token_id, day
            ), upserted AS (
                INSERT INTO accounts_tokenusage (token_id, window_start, count)
                SELECT token_id, day, count FROM per_day
                ON CONFLICT (token_id, window_start) DO UPDATE SET count = accounts_tokenusage.count + EXCLUDED.count
                RETURNING 1
            )
            SELECT coalesce(sum(n), 0) FROM per_day
            """,
            [cutoff],
        )
        (folded,) = cur.fetchone()
    return int(folded)
