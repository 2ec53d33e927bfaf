"""Token usage kept small: the per-minute rows the rate limit counts (accounts.tokens.auth) compacted into
per-day rows."""

from __future__ import annotations

from datetime import timedelta

from django.db import connection
from django.utils import timezone

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
