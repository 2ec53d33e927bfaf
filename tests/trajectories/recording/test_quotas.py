"""Per-token daily ingest quotas: past the quota, the API answers 429
``ingest_quota_exceeded`` with Retry-After and stores nothing; other tokens
and banks without a quota are not limited."""

from datetime import UTC, datetime

import pytest
import time_machine

from accounts.teams.banks import bank_update_settings
from tests import factories
from trajectories.models import Trajectory

pytestmark = pytest.mark.django_db

RUN = {"task": "Find the opening hours.", "steps": factories.STEPS}


def post(client, token, path="/api/v1/trajectories", body=RUN):
    return client.post(path, data=body, content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {token}")


@time_machine.travel(datetime(2026, 3, 2, 23, 0, tzinfo=UTC), tick=False)  # an hour before the quota resets
def test_quota_refuses_past_the_limit_per_token(client, bank, owner):
    one, two = factories.make_token(bank, name="one"), factories.make_token(bank, name="two")
    assert post(client, one).status_code == 202  # no quota yet
    bank_update_settings(bank=bank, actor=owner, ingest_quota_per_day=2)
    assert post(client, one).status_code == 202
    refused = post(client, one)
    assert refused.status_code == 429
    assert refused.json()["code"] == "ingest_quota_exceeded" and "resets at 00:00 UTC" in refused.json()["detail"]
    assert refused["Retry-After"] == "3600"  # until 00:00 UTC
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


def _run(external_id: str) -> dict:
    return {**RUN, "external_id": external_id}


def test_a_repeated_external_id_past_the_quota_is_the_duplicate_answer_and_costs_nothing(client, bank, owner):
    token = factories.make_token(bank)
    bank_update_settings(bank=bank, actor=owner, ingest_quota_per_day=2)
    first = post(client, token, body=_run("run-1"))
    assert first.status_code == 202
    again = post(client, token, body=_run("run-1"))  # a retry before the quota is spent: no cost
    assert again.status_code == 200 and again.json()["duplicate"] and again.json()["id"] == first.json()["id"]
    assert post(client, token, body=_run("run-2")).status_code == 202  # the repeat did not use the second slot
    assert post(client, token, body=_run("run-3")).status_code == 429  # now the quota is spent
    for _ in range(2):  # past the quota, a retry still learns its run was stored
        repeat = post(client, token, body=_run("run-1"))
        assert repeat.status_code == 200, repeat.content
        assert repeat.json()["duplicate"] and repeat.json()["id"] == first.json()["id"]
    assert Trajectory.objects.filter(bank=bank).count() == 2


def test_a_batch_counts_only_what_it_would_store_against_the_quota(client, bank, owner):
    token = factories.make_token(bank)
    bank_update_settings(bank=bank, actor=owner, ingest_quota_per_day=2)
    path = "/api/v1/trajectories/batch"
    stored = post(client, token, path, {"trajectories": [_run("run-1")]})
    assert stored.status_code == 200 and stored.json()["accepted"] == 1
    # One new run, and two repeats of run-1 (one stored before, one earlier in this batch): 1 + 1 ≤ 2.
    mixed = post(client, token, path, {"trajectories": [_run("run-1"), _run("run-2"), _run("run-2")]})
    assert mixed.status_code == 200, mixed.content
    assert [(r["ok"], r.get("duplicate")) for r in mixed.json()["results"]] == [
        (True, True),
        (True, False),
        (True, True),
    ]
    # The quota is spent: a batch of repeats only is still answered, item by item.
    repeats = post(client, token, path, {"trajectories": [_run("run-2"), _run("run-1")]})
    assert repeats.status_code == 200, repeats.content
    assert all(r["ok"] and r["duplicate"] for r in repeats.json()["results"])
    refused = post(client, token, path, {"trajectories": [_run("run-1"), _run("run-3")]})
    assert refused.status_code == 429 and "this batch has 1 new" in refused.json()["detail"]
    assert Trajectory.objects.filter(bank=bank).count() == 2


def test_a_batch_of_repeats_is_answered_after_the_quota_was_lowered_below_what_was_sent(client, bank, owner):
    token = factories.make_token(bank)
    for name in ("run-1", "run-2"):
        assert post(client, token, body=_run(name)).status_code == 202
    bank_update_settings(bank=bank, actor=owner, ingest_quota_per_day=1)  # 2 sent > 1
    repeats = post(client, token, "/api/v1/trajectories/batch", {"trajectories": [_run("run-1"), _run("run-2")]})
    assert repeats.status_code == 200 and all(r["duplicate"] for r in repeats.json()["results"])
    assert post(client, token, body=_run("run-2")).json()["duplicate"]
