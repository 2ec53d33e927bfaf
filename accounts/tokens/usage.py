"""Token usage: the per-minute request counter behind the rate limiter (one
raw-SQL upsert per API request) and its compaction into per-day rows. Raw SQL
here because the ORM has no atomic upsert-and-return."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from functools import cache

from django.db import connection
from django.db.models import Field, Model
from django.utils import timezone

from accounts.models import ApiToken, Bank, Team
from accounts.tokens.services import TOKEN_PREFIX, hash_token


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
    "SELECT {token_id}, %s, 1 FROM {source}(SELECT set_config('synchronous_commit', 'off', true)) AS async_commit "
    "{where}ON CONFLICT (token_id, window_start) DO UPDATE SET count = accounts_tokenusage.count + 1 "
    "RETURNING count"
)


def api_token_hit(*, token: ApiToken, limit: int, now: datetime | None = None) -> RateDecision:
    """Count one request of ``token`` in the current fixed one-minute window
    (one upsert, atomic under concurrency) and say whether it is within
    ``limit`` requests per minute (0 means unlimited). Requests over the
    limit are counted too, so request counts show what agents attempted."""
    epoch, window_start_epoch, window_start = _window(now)
    with connection.cursor() as cur:
        cur.execute(_HIT_SQL.format(token_id="%s", source="", where=""), [token.pk, window_start])
        (count,) = cur.fetchone()
    return _decision(count=count, limit=limit, epoch=epoch, window_start_epoch=window_start_epoch)


@dataclass(frozen=True)
class TokenUse:
    """What api_token_use found: the live token (with its bank and team) or
    None, and the rate decision when the request was counted (a live token
    with the scope, of a bank that is not archived), else None."""

    token: ApiToken | None
    decision: RateDecision | None


_TOKEN_MODELS: tuple[tuple[type[Model], str], ...] = ((ApiToken, "t"), (Bank, "b"), (Team, "m"))


@cache
def _token_use_sql(*, scoped: bool) -> str:
    columns = ", ".join(
        f'{alias}."{f.column}" AS {alias}{n}'
        for model, alias in _TOKEN_MODELS
        for n, f in enumerate(model._meta.concrete_fields)
    )
    hit = _HIT_SQL.format(
        token_id="token.t0",  # the pk is the first concrete field
        source="token, ",
        where="WHERE token.b{archived} IS NULL{scope} ".format(
            archived=[f.name for f in Bank._meta.concrete_fields].index("archived_at"),
            scope=" AND token.t{scopes} ? %s".format(
                scopes=[f.name for f in ApiToken._meta.concrete_fields].index("scopes")
            )
            if scoped
            else "",
        ),
    )
    return (
        f"WITH token AS (SELECT {columns} FROM accounts_apitoken t"
        " JOIN accounts_bank b ON b.id = t.bank_id JOIN accounts_team m ON m.id = b.team_id"
        " WHERE t.token_hash = %s AND t.revoked_at IS NULL AND (t.expires_at IS NULL OR t.expires_at > %s)),"
        f" hit AS ({hit})"
        " SELECT token.*, (SELECT count FROM hit) FROM token"
    )


@cache
def _model_layout(model: type[Model]) -> tuple[list[str], list[tuple[int, list, Field]]]:
    """``model``'s concrete fields' attnames and, for those that have any, their db converters."""
    fields = model._meta.concrete_fields
    converters = [
        (n, f.get_db_converters(connection), f) for n, f in enumerate(fields) if f.get_db_converters(connection)
    ]
    return [f.attname for f in fields], converters


def _instance(model: type[Model], values: list):
    names, converters = _model_layout(model)
    for n, functions, field in converters:
        for converter in functions:
            values[n] = converter(values[n], field, connection)
    return model.from_db(connection.alias, names, values)


def api_token_use(*, raw: str, scope: str | None, now: datetime | None = None) -> TokenUse:
    """An agent-API request's token check and rate count in ONE statement (one
    round trip on every request's path): the live token for the presented
    secret (as accounts.teams.selectors.api_token_for_secret finds it: unknown,
    revoked and expired are all None), and — when the token has ``scope``
    (None: any) and its bank is not archived — api_token_hit's count and
    decision against the bank's ``rate_limit_per_minute``. A refused token
    (wrong scope, archived bank) is not counted, as before."""
    if not raw or not raw.startswith(TOKEN_PREFIX) or len(raw) > 200:
        return TokenUse(token=None, decision=None)
    now = now or timezone.now()
    epoch, window_start_epoch, window_start = _window(now)
    params = [hash_token(raw), now, window_start, *([scope] if scope is not None else [])]
    with connection.cursor() as cur:
        cur.execute(_token_use_sql(scoped=scope is not None), params)
        row = cur.fetchone()
    if row is None:
        return TokenUse(token=None, decision=None)
    instances, start = [], 0
    for model, _alias in _TOKEN_MODELS:
        width = len(model._meta.concrete_fields)
        instances.append(_instance(model, list(row[start : start + width])))
        start += width
    token, bank, team = instances
    bank.team = team
    token.bank = bank
    count = row[-1]
    if count is None:
        return TokenUse(token=token, decision=None)
    decision = _decision(
        count=count, limit=bank.rate_limit_per_minute, epoch=epoch, window_start_epoch=window_start_epoch
    )
    return TokenUse(token=token, decision=decision)


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
