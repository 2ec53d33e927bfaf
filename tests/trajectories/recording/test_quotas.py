"""Per-token daily ingest quotas: past the quota, the API answers 429
``ingest_quota_exceeded`` with Retry-After and stores nothing; other tokens
and banks without a quota are not limited."""

import pytest

from accounts.services import bank_update_settings
from tests import factories
from trajectories.models import Trajectory

pytestmark = pytest.mark.django_db

RUN = {"task": "Find the opening hours.", "steps": factories.STEPS}


def post(client, token, path="/api/v1/trajectories", body=RUN):
    return client.post(path, data=body, content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {token}")


def test_quota_refuses_past_the_limit_per_token(client, bank, owner):
    one, two = factories.make_token(bank, name="one"), factories.make_token(bank, name="two")
    assert post(client, one).status_code == 202  # no quota yet
    bank_update_settings(bank=bank, actor=owner, ingest_quota_per_day=2)
    assert post(client, one).status_code == 202
    refused = post(client, one)
    assert refused.status_code == 429
    assert refused.json()["code"] == "ingest_quota_exceeded" and "resets at 00:00 UTC" in refused.json()["detail"]
    assert 0 < int(refused["Retry-After"]) <= 86400
    assert Trajectory.objects.filter(bank=bank).count() == 2
    assert post(client, two).status_code == 202  # a quota per token

    batch = {"trajectories": [RUN, RUN]}
    refused = post(client, two, "/api/v1/trajectories/batch", batch)  # 1 + 2 > 2: nothing stored
    assert refused.status_code == 429 and "this batch has 2" in refused.json()["detail"]
    assert Trajectory.objects.filter(bank=bank).count() == 3


def test_quota_of_one_bank_does_not_limit_another(client, bank, other_bank, owner):
    bank_update_settings(bank=bank, actor=owner, ingest_quota_per_day=1)
    other = factories.make_token(other_bank)
    for _ in range(3):
        assert post(client, other).status_code == 202
