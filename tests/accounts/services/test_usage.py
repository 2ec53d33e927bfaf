"""Token usage: the rate counter's fixed windows and the compaction of old minutes. Against the real database."""

from datetime import UTC, timedelta

from django.utils import timezone

from accounts.tokens.auth import api_token_hit
from tests import factories


def test_rate_counter_counts_in_fixed_windows(token, bank):
    from accounts.tokens.auth import api_token_for_secret

    api_token = api_token_for_secret(raw=token)
    t0 = timezone.now().replace(second=5, microsecond=0)
    decisions = [api_token_hit(token=api_token, limit=2, now=t0) for _ in range(3)]
    assert [d.count for d in decisions] == [1, 2, 3]
    assert [d.allowed for d in decisions] == [True, True, False]
    assert decisions[-1].retry_after == 55
    # The next minute starts a fresh window.
    assert api_token_hit(token=api_token, limit=2, now=t0 + timedelta(minutes=1)).count == 1
    # 0 means no limit.
    assert api_token_hit(token=api_token, limit=0, now=t0).allowed


def test_token_usage_compaction_folds_old_minutes_into_days_and_keeps_totals(bank):
    from datetime import datetime, timedelta

    from accounts.models import TokenUsage
    from accounts.tokens.auth import api_token_for_secret
    from accounts.tokens.usage import token_usage_compact

    token = api_token_for_secret(raw=factories.make_token(bank))
    other = api_token_for_secret(raw=factories.make_token(bank, name="other"))
    now = timezone.now().replace(second=0, microsecond=0)
    day = datetime(2026, 1, 10, tzinfo=UTC)
    rows = [
        TokenUsage(token=token, window_start=day, count=2),  # the day's first minute: the accumulator
        TokenUsage(token=token, window_start=day + timedelta(hours=3, minutes=7), count=5),
        TokenUsage(token=token, window_start=day + timedelta(hours=23, minutes=59), count=1),
        TokenUsage(token=token, window_start=day + timedelta(days=1, minutes=1), count=4),
        TokenUsage(token=other, window_start=day + timedelta(hours=1), count=3),
        TokenUsage(token=token, window_start=now - timedelta(hours=1), count=7),  # recent: kept per minute
    ]
    TokenUsage.objects.bulk_create(rows)

    assert token_usage_compact() == 4
    left = sorted((u.token_id, u.window_start, u.count) for u in TokenUsage.objects.all())
    assert left == sorted(
        [
            (token.pk, day, 8),
            (token.pk, day + timedelta(days=1), 4),
            (other.pk, day, 3),
            (token.pk, now - timedelta(hours=1), 7),
        ]
    )
    assert token_usage_compact() == 0  # idempotent
    assert sum(u.count for u in TokenUsage.objects.filter(token=token)) == 2 + 5 + 1 + 4 + 7
