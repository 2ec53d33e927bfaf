"""Lessons that expire or go stale: a validity set by a reviewer (never in
the past) or by the bank's default; an expired item is not served (through a
live server) and is listed for re-review; items remember their environment,
and a newer value reported by a trajectory marks the older items stale."""

from __future__ import annotations

import json
import urllib.request
from datetime import timedelta

import pytest
from django.utils import timezone

from memories.items.models import ItemStatus, MemoryItem
from memories.learning.policy import bank_learning_update
from memories.learning.selectors import LifecycleState, lifecycle_items
from memories.learning.validity import items_environment_observe, memory_item_validity_set
from memories.review.decisions import memory_item_approve
from reasoningbank_site.errors import Invalid
from tests import factories
from tests.factories import make_done_trajectory, propose_item

ITEM = "/api/v1/review/items/{}"
LIBRARY = dict(
    title="Prefer the official source",
    description="Use when a schedule question comes up.",
    content="Check the institution's own pages before answering.",
)
MUSEUM = dict(
    title="Check the museum's holiday calendar",
    description="Use when a museum's opening hours are asked for.",
    content="Museums change opening hours on public holidays: read the holiday calendar page first.",
)


@pytest.fixture
def review(bank):
    return {"HTTP_AUTHORIZATION": f"Bearer {factories.make_token(bank, scopes=('review',))}"}


def _expire(item):
    """Time passes: the item's validity is now behind us."""
    MemoryItem.objects.filter(pk=item.pk).update(valid_until=timezone.now() - timedelta(seconds=1))


def test_a_validity_in_the_past_is_refused_with_a_clear_message(bank, item, owner):
    with pytest.raises(Invalid, match="in the past"):
        memory_item_validity_set(item=item, author=owner, valid_until=timezone.now() - timedelta(days=1))
    with pytest.raises(Invalid, match="time zone"):
        memory_item_validity_set(item=item, author=owner, valid_until=timezone.now().replace(tzinfo=None))
    item.refresh_from_db()
    assert item.valid_until is None


def test_review_api_patch_sets_and_removes_validity_and_refuses_the_past_as_422_json(client, bank, item, review):
    url = ITEM.format(item.public_id)
    past = client.patch(url, {"valid_until": "2001-01-01T00:00:00Z"}, content_type="application/json", **review)
    assert past.status_code == 422 and past.json()["code"] == "validation_error", past.json()
    assert "in the past" in past.json()["detail"]
    assert "Valid until 1 Jan 2001 00:00 UTC is in the past" in past.json()["detail"]  # a moment, not a day

    future = (timezone.now() + timedelta(days=30)).replace(microsecond=0)
    body = client.patch(url, {"valid_until": future.isoformat()}, content_type="application/json", **review).json()
    assert body["valid_until"].startswith(future.strftime("%Y-%m-%dT%H:%M:%S")) and body["expired"] is False
    assert client.get(url, **review).json()["valid_until"] == body["valid_until"]
    # Other fields left out keep it; an explicit null removes it.
    kept = client.patch(url, {"note": "n", "tags": ["a"]}, content_type="application/json", **review).json()
    assert kept["valid_until"] == body["valid_until"]
    cleared = client.patch(url, {"valid_until": None}, content_type="application/json", **review).json()
    assert cleared["valid_until"] is None
    item.refresh_from_db()
    assert [v.action for v in item.versions.order_by("number")][-3:] == ["validity", "edited", "validity"]


def test_the_bank_default_validity_starts_at_approval(bank, item, owner):
    bank_learning_update(bank=bank, actor=owner, valid_days=180)
    before = timezone.now()
    memory_item_approve(item=item, author=owner)
    item.refresh_from_db()
    assert before + timedelta(days=180) <= item.valid_until <= timezone.now() + timedelta(days=180)


@pytest.mark.django_db(transaction=True)
def test_an_expired_item_is_not_served_by_the_live_server_and_is_listed_for_re_review(live_server, owner):
    bank = factories.make_bank()
    token = factories.make_token(bank)
    trajectory = make_done_trajectory(bank)
    library = propose_item(bank, trajectory, **LIBRARY)
    museum = propose_item(bank, trajectory, **MUSEUM)
    for item in (library, museum):
        memory_item_approve(item=item, author=owner, confirm_duplicate=True)

    def served():
        request = urllib.request.Request(
            f"{live_server.url}/api/v1/retrieve",
            data=json.dumps({"query": "When is the city library open on Sundays?", "k": 5}).encode(),
            headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
        )
        with urllib.request.urlopen(request, timeout=60) as response:
            return {m["title"] for m in json.load(response)["items"]}

    assert served() == {LIBRARY["title"], MUSEUM["title"]}
    _expire(library)
    assert served() == {MUSEUM["title"]}
    assert list(lifecycle_items(bank=bank, state=LifecycleState.EXPIRED)) == [library]
    library.refresh_from_db()
    assert library.status == ItemStatus.APPROVED  # nothing removed
    # Re-reviewed: a new validity serves it again.
    memory_item_validity_set(item=library, author=owner, valid_until=timezone.now() + timedelta(days=1))
    assert served() == {LIBRARY["title"], MUSEUM["title"]}


def test_items_remember_their_environment_and_a_newer_value_marks_the_older_ones_stale(bank, owner, client, review):
    bank_learning_update(bank=bank, actor=owner, environment_keys=["site_version"])
    trajectory = make_done_trajectory(bank)
    meta = [{"site_version": "3.1", "agent_version": "1.2", "other": "x"}]
    old = propose_item(bank, trajectory, source_agents=["web-agent"], source_metadata=meta, **LIBRARY)
    other_agent = propose_item(bank, trajectory, source_agents=["mail-agent"], source_metadata=meta, **MUSEUM)
    for item in (old, other_agent):
        memory_item_approve(item=item, author=owner, confirm_duplicate=True)
    old.refresh_from_db()
    assert old.environment == {"agent": "web-agent", "agent_version": "1.2", "site_version": "3.1"}

    # The same values, or an older trajectory, change nothing.
    assert items_environment_observe(bank=bank, agent="web-agent", metadata=meta[0], observed_at=timezone.now()) == 0
    earlier = old.created_at - timedelta(seconds=1)
    new = {"site_version": "4.0"}
    assert items_environment_observe(bank=bank, agent="web-agent", metadata=new, observed_at=earlier) == 0

    assert items_environment_observe(bank=bank, agent="web-agent", metadata=new, observed_at=timezone.now()) == 1
    old.refresh_from_db()
    assert old.status == ItemStatus.APPROVED and "site_version is now '4.0'" in old.stale_reason
    assert "'3.1'" in old.stale_reason and old.versions.order_by("number").last().action == "stale"
    assert list(lifecycle_items(bank=bank, state=LifecycleState.STALE)) == [old]
    url = ITEM.format(old.public_id)
    body = client.get(url, **review).json()
    assert body["stale_reason"] == old.stale_reason and body["stale_environment"] == new
    assert body["environment"]["site_version"] == "3.1"

    # A reviewer confirms it still holds: it adopts the new value, and the same report no longer marks it.
    body = client.patch(url, {"confirm_current": True}, content_type="application/json", **review).json()
    assert body["stale_reason"] == "" and body["environment"]["site_version"] == "4.0"
    assert items_environment_observe(bank=bank, agent="web-agent", metadata=new, observed_at=timezone.now()) == 0
