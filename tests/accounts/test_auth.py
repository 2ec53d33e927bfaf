"""TokenAuth through real HTTP: 401 / 403 / archived / 429 with Retry-After,
and request counts."""

from datetime import timedelta

import pytest
import time_machine
from django.utils import timezone

from accounts.models import ApiToken, TokenUsage
from accounts.teams.banks import bank_archive, bank_unarchive, bank_update_settings
from accounts.tokens.services import api_token_create, api_token_revoke
from tests import factories

pytestmark = pytest.mark.urls("tests.accounts.api_urls")
URL = "/probe/ping"


def _get(client, secret=None):
    headers = {"HTTP_AUTHORIZATION": f"Bearer {secret}"} if secret else {}
    return client.get(URL, **headers)


def test_live_token_passes_and_sets_bank(client, bank, token, django_assert_num_queries):
    with django_assert_num_queries(3):  # the token, its rate count, and the first use's last_used_at
        response = _get(client, token)
    assert response.status_code == 200
    assert response.json()["bank"] == str(bank.public_id)
    assert ApiToken.objects.get(prefix=token[:12]).last_used_at is not None
    with django_assert_num_queries(2):  # the token and its rate count: last_used_at is written at most once a minute
        assert _get(client, token).status_code == 200
    assert TokenUsage.objects.get(token__prefix=token[:12]).count == 2


@pytest.mark.parametrize(
    "secret,code", [(None, "missing_token"), ("rb_wrong", "invalid_token"), ("garbage", "invalid_token")]
)
def test_missing_or_unknown_token_is_401_json(client, db, secret, code):
    response = _get(client, secret)
    assert response.status_code == 401
    assert response.json()["code"] == code


def test_revoked_and_expired_tokens_are_401(client, bank):
    revoked = api_token_create(bank=bank, name="r", scopes=["retrieve"])
    api_token_revoke(token=revoked.token)
    expired = api_token_create(bank=bank, name="e", scopes=["retrieve"], expires_at=timezone.now() + timedelta(hours=1))
    ApiToken.objects.filter(pk=expired.token.pk).update(expires_at=timezone.now() - timedelta(seconds=1))
    for secret in (revoked.secret, expired.secret):
        response = _get(client, secret)
        assert response.status_code == 401 and response.json()["code"] == "invalid_token"


def test_wrong_scope_is_403(client, bank):
    secret = factories.make_token(bank, scopes=("ingest",))
    response = _get(client, secret)
    assert response.status_code == 403 and response.json()["code"] == "missing_scope"
    assert not TokenUsage.objects.filter(token__prefix=secret[:12]).exists()  # refused requests are not counted


def test_archived_bank_is_403_bank_archived_and_unarchive_restores(client, bank, token, owner):
    bank_archive(bank=bank, actor=owner)
    response = _get(client, token)
    assert response.status_code == 403
    assert response.json()["code"] == "bank_archived"
    assert not TokenUsage.objects.filter(token__prefix=token[:12]).exists()  # refused requests are not counted
    bank_unarchive(bank=bank, actor=owner)
    assert _get(client, token).status_code == 200
    assert TokenUsage.objects.get(token__prefix=token[:12]).count == 1


def test_rate_limit_answers_429_with_retry_after(client, bank, token, owner):
    bank_update_settings(bank=bank, actor=owner, rate_limit_per_minute=3)
    with time_machine.travel(timezone.now().replace(second=5, microsecond=0), tick=False):  # 5 s into a window
        statuses = [_get(client, token).status_code for _ in range(3)]
        assert statuses == [200, 200, 200]
        response = _get(client, token)
        assert response.status_code == 429
        body = response.json()
        assert body["code"] == "rate_limited" and "3 requests per minute" in body["detail"]
        assert response["Retry-After"] == "55"  # the seconds left in the one-minute window
        # Limits are per token: another token of the same bank is unaffected.
        assert _get(client, factories.make_token(bank)).status_code == 200
        # Attempts are counted, including the rejected one.
        assert TokenUsage.objects.get(token__prefix=token[:12]).count == 4


def test_zero_rate_limit_means_unlimited(client, bank, token, owner):
    bank_update_settings(bank=bank, actor=owner, rate_limit_per_minute=0)
    assert {_get(client, token).status_code for _ in range(5)} == {200}


def test_token_endpoint_describes_any_live_token(client, bank):
    secret = factories.make_token(bank, scopes=("ingest",))
    response = client.get("/probe/token", HTTP_AUTHORIZATION=f"Bearer {secret}")
    assert response.status_code == 200
    body = response.json()
    assert body["bank_id"] == str(bank.public_id) and body["scopes"] == ["ingest"] and body["prefix"] == secret[:12]
    assert body["rate_limit_per_minute"] == bank.rate_limit_per_minute
    assert client.get("/probe/token").status_code == 401
