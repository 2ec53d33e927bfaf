"""The pages of what follows serving: each lifecycle state has a queue
filter and a badge; the item page shows a refused item's repeats with the
reviewer's reason, a retirement proposal's evidence, staleness and validity,
and takes the decisions (reopen, keep, still holds, validity, archive as
wrong, supersede) as a reviewer only."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from memories.items.models import ItemStatus, MemoryItem
from memories.items.services import memory_item_edit
from memories.learning.models import BankLearning
from memories.learning.policy import bank_learning_update
from memories.learning.refusals import memory_item_archive_as_wrong
from memories.learning.retirement import ItemEffect, memory_items_outcomes_record
from memories.review.decisions import memory_item_approve, memory_item_reject
from tests.factories import make_done_trajectory, propose_item

REASON = "Official pages of this city are months out of date."


@pytest.fixture
def scene(bank, owner, trajectory):
    """One item in each lifecycle state, and one plainly proposed."""
    rejected = propose_item(bank, trajectory, title="Prefer the official source")
    memory_item_reject(item=rejected, author=owner, reason=REASON)
    later = make_done_trajectory(bank)
    propose_item(bank, later, title="Prefer official sources")  # a repeat: recorded on the rejected item
    expired = propose_item(bank, trajectory, title="Type dates into date pickers", content="Type YYYY-MM-DD.")
    memory_item_approve(item=expired, author=owner, confirm_duplicate=True)
    MemoryItem.objects.filter(pk=expired.pk).update(valid_until=timezone.now() - timedelta(days=1))
    hurting = propose_item(bank, trajectory, title="Sign in before listing orders", content="Log in first.")
    memory_item_approve(item=hurting, author=owner, confirm_duplicate=True)
    bank_learning_update(bank=bank, actor=owner, suspend_when_hurting=True)
    evidence = {
        "served_rate": 0.3,
        "withheld_rate": 0.7,
        "served_judged": 40,
        "withheld_judged": 38,
        "difference": -0.4,
        "low": -0.6,
        "high": -0.2,
        "comparison": "randomised",
    }
    memory_items_outcomes_record(
        bank=bank, effects=[ItemEffect(str(hurting.public_id), -0.4, 78, hurts=True, evidence=evidence)]
    )
    stale = propose_item(bank, trajectory, title="Export the report as CSV", content="Use the export menu.")
    memory_item_approve(item=stale, author=owner, confirm_duplicate=True)
    MemoryItem.objects.filter(pk=stale.pk).update(stale_reason="site_version is now '4' (learnt under '3')")
    fresh = propose_item(bank, trajectory, title="Book a table by phone", content="Call the restaurant.")
    return {
        "rejected": rejected,
        "later": later,
        "expired": expired,
        "hurting": hurting,
        "stale": stale,
        "fresh": fresh,
    }


def _queue(client, bank, **params):
    return client.get(reverse("memories:review", kwargs={"bank_id": bank.public_id}), params).content.decode()


def test_each_state_has_a_queue_filter_and_a_badge(client, reviewer, bank, scene):
    client.force_login(reviewer)
    default = _queue(client, bank)
    assert scene["fresh"].title in default and scene["expired"].title not in default
    for state, key, badge in [
        ("repeated", "rejected", 'data-lifecycle="repeated"'),
        ("expired", "expired", 'data-lifecycle="expired"'),
        ("retirement", "hurting", 'data-lifecycle="retirement"'),
        ("stale", "stale", 'data-lifecycle="stale"'),
    ]:
        page = _queue(client, bank, state=state)
        others = [name for name in ("rejected", "expired", "hurting", "stale", "fresh") if name != key]
        assert scene[key].title in page, state
        assert not any(scene[name].title in page for name in others), state
        if badge:
            assert badge in page, state
    retirement = _queue(client, bank, state="retirement")
    assert "suspended" in retirement and "Impact says this item hurts" in retirement  # the evidence, in the row
    assert "site_version is now" in _queue(client, bank, state="stale")
    assert _queue(client, bank, state="nonsense")  # an unknown state is ignored, never a 500


def test_an_item_archived_as_wrong_and_distilled_again_is_badged_repeated_in_the_queue(client, reviewer, bank, owner):
    wrong = memory_item_approve(
        item=propose_item(bank, title="Call the shop", content="Phone before you go."), author=owner
    )
    memory_item_archive_as_wrong(item=wrong, author=owner, reason="The shop has no phone.")
    propose_item(bank, make_done_trajectory(bank), title="Call the shop", content="Phone before you go.")
    client.force_login(reviewer)
    page = _queue(client, bank, state="repeated")
    assert wrong.title in page and 'data-lifecycle="repeated"' in page


def test_the_item_page_shows_a_refused_items_repeats_with_the_reason_and_reopens_it(client, reviewer, bank, scene):
    client.force_login(reviewer)
    rejected, later = scene["rejected"], scene["later"]
    url = reverse("memories:item_detail", kwargs={"bank_id": bank.public_id, "item_id": rejected.public_id})
    page = client.get(url).content.decode()
    assert REASON in page and "Distilled again 1 time since" in page and "data-repeats" in page
    assert str(later.public_id)[:8] in page and "Reopen for review" in page

    action = reverse("memories:item_lifecycle", kwargs={"bank_id": bank.public_id, "item_id": rejected.public_id})
    response = client.post(action, {"action": "reopen", "note": "seen twice"}, follow=True)
    assert response.status_code == 200 and "back in the review queue" in response.content.decode()
    rejected.refresh_from_db()
    assert rejected.status == ItemStatus.PROPOSED and rejected.title in _queue(client, bank)


def test_retirement_evidence_and_keep(client, reviewer, bank, scene):
    client.force_login(reviewer)
    hurting = scene["hurting"]
    url = reverse("memories:item_detail", kwargs={"bank_id": bank.public_id, "item_id": hurting.public_id})
    page = client.get(url).content.decode()
    assert "Proposed for retirement" in page and "suspended" in page and "data-evidence" in page
    assert "served: 40 judged, 30% success" in page and "withheld: 38 judged, 70% success" in page
    action = reverse("memories:item_lifecycle", kwargs={"bank_id": bank.public_id, "item_id": hurting.public_id})
    client.post(action, {"action": "keep"})
    hurting.refresh_from_db()
    assert hurting.retirement_reason == "" and not hurting.suspended


def test_validity_stale_archive_as_wrong_and_supersede_from_the_item_page(client, reviewer, bank, scene):
    client.force_login(reviewer)
    stale, expired, fresh = scene["stale"], scene["expired"], scene["fresh"]

    def act(item, **data):
        url = reverse("memories:item_lifecycle", kwargs={"bank_id": bank.public_id, "item_id": item.public_id})
        return client.post(url, data, follow=True).content.decode()

    page = client.get(
        reverse("memories:item_detail", kwargs={"bank_id": bank.public_id, "item_id": expired.public_id})
    ).content.decode()
    assert 'data-lifecycle="expired"' in page
    assert "in the past" in act(expired, action="validity", valid_until="2001-01-01")
    expired.refresh_from_db()
    assert expired.valid_until < timezone.now()  # refused, unchanged
    act(expired, action="validity", valid_until=(timezone.now() + timedelta(days=30)).date().isoformat())
    expired.refresh_from_db()
    assert expired.valid_until > timezone.now() + timedelta(days=29)

    act(stale, action="still-holds")
    stale.refresh_from_db()
    assert stale.stale_reason == ""

    assert "Say why it is wrong" in act(stale, action="archive-wrong", note="")
    act(stale, action="archive-wrong", note="The export menu moved.")
    stale.refresh_from_db()
    assert stale.status == ItemStatus.ARCHIVED and stale.archived_as_wrong

    act(expired, action="supersede", replacement=str(fresh.public_id))
    expired.refresh_from_db()
    assert expired.status == ItemStatus.SUPERSEDED and expired.superseded_by_id == fresh.pk
    page = client.get(
        reverse("memories:item_detail", kwargs={"bank_id": bank.public_id, "item_id": expired.public_id})
    ).content.decode()
    assert "Replaced by" in page and fresh.title in page


def test_lifecycle_actions_need_a_reviewer_of_the_bank(client, viewer, stranger, bank, scene):
    rejected = scene["rejected"]
    url = reverse("memories:item_lifecycle", kwargs={"bank_id": bank.public_id, "item_id": rejected.public_id})
    assert client.post(url, {"action": "reopen"}).status_code == 302  # anonymous: to the login page
    client.force_login(viewer)
    assert client.post(url, {"action": "reopen"}).status_code == 403
    client.force_login(stranger)
    assert client.post(url, {"action": "reopen"}).status_code == 404
    rejected.refresh_from_db()
    assert rejected.status == ItemStatus.REJECTED


def test_the_learning_settings_page_is_read_by_members_and_changed_by_admins(client, owner, viewer, stranger, bank):
    url = reverse("memories:bank_learning", kwargs={"bank_id": bank.public_id})
    client.force_login(viewer)
    page = client.get(url).content.decode()
    assert "Learning after serving" in page and "admins and owners change them" in page
    assert client.post(url, {"repeat_threshold": "0.9"}).status_code == 403
    client.force_login(stranger)
    assert client.get(url).status_code == 404

    client.force_login(owner)
    form = {
        "repeat_threshold": "0.9",
        "rejected_examples": "2",
        "valid_days": "180",
        "environment_keys": "site_version, model",
        "utility_weight": "0.3",
        "utility_prior": "40",
        "suspend_when_hurting": "on",
    }
    refused = client.post(url, {**form, "repeat_threshold": "0.1", "environment_keys": "bad key!"})
    assert refused.status_code == 200 and "Between 0.5 and 1." in refused.content.decode()
    assert client.post(url, form).status_code == 302
    learning = BankLearning.objects.get(bank=bank)
    assert (learning.repeat_threshold, learning.valid_days, learning.environment_keys) == (
        0.9,
        180,
        ["site_version", "model"],
    )
    assert learning.suspend_when_hurting and learning.utility_prior == 40
    assert "site_version, model" in client.get(url).content.decode()
    assert bank.team.audit_events.filter(action="bank.update_learning").count() == 1


def test_utility_ranking_is_a_bank_setting_the_settings_page_shows(client, owner, bank):
    url = reverse("accounts:bank_settings", kwargs={"bank_id": bank.public_id})
    client.force_login(owner)
    page = client.get(url).content.decode()
    assert (
        'name="utility_ranking"' in page
        and reverse("memories:bank_learning", kwargs={"bank_id": bank.public_id}) in page
    )


def test_the_item_page_folds_a_long_history_after_five_entries(client, reviewer, bank, owner):
    item = propose_item(bank, title="Prefer the official source")
    for n in range(7):
        memory_item_edit(item=item, author=owner, tags=[f"edit-{n}"])
    client.force_login(reviewer)
    page = client.get(reverse("memories:item_detail", kwargs={"bank_id": bank.public_id, "item_id": item.public_id}))
    html = page.content.decode()
    shown, folded = html.split("data-history-more", 1)
    assert "<summary>Show all 8</summary>" in folded
    assert shown.count("<strong>edited</strong>") == 5 and folded.count("<strong>edited</strong>") == 2
    assert "<strong>created</strong>" in folded  # the oldest entry, folded


def test_a_past_validity_names_the_day_in_the_reviewers_time_zone(client, reviewer, bank, scene, settings):
    """The day a reviewer picks is theirs: it lasts to the end of that day in their time zone, and a
    refusal or the history names it as a day, not as an ISO moment in UTC."""
    from zoneinfo import ZoneInfo

    settings.TIME_ZONE = "America/New_York"
    client.force_login(reviewer)
    expired = scene["expired"]
    url = reverse("memories:item_lifecycle", kwargs={"bank_id": bank.public_id, "item_id": expired.public_id})
    page = client.post(url, {"action": "validity", "valid_until": "2020-01-01"}, follow=True).content.decode()
    assert "Valid until 1 Jan 2020 is in the past" in page
    assert "2020-01-01T23:59:59" not in page and "+00:00" not in page

    client.post(url, {"action": "validity", "valid_until": "2031-03-05"})
    expired.refresh_from_db()
    assert expired.valid_until == datetime(2031, 3, 5, 23, 59, 59, 999999, tzinfo=ZoneInfo("America/New_York"))
    assert expired.versions.order_by("-number").first().note == "valid until 5 Mar 2031"


def test_a_picked_day_lasts_to_the_end_of_that_day_in_the_browsers_time_zone(client, reviewer, bank, scene):
    """The browser's zone (the rb_tz cookie app.js sets) is the reviewer's; a cookie naming no zone, or
    something that is not a name at all, falls back to the site's zone and never fails the request."""
    from zoneinfo import ZoneInfo

    client.force_login(reviewer)
    expired = scene["expired"]
    url = reverse("memories:item_lifecycle", kwargs={"bank_id": bank.public_id, "item_id": expired.public_id})
    client.cookies["rb_tz"] = "Asia%2FTokyo"
    client.post(url, {"action": "validity", "valid_until": "2031-03-05"})
    expired.refresh_from_db()
    assert expired.valid_until == datetime(2031, 3, 5, 23, 59, 59, 999999, tzinfo=ZoneInfo("Asia/Tokyo"))

    for junk in ("Nowhere%2FAtlantis", "..%2F..%2Fetc%2Fpasswd", "x" * 300, "%00"):
        client.cookies["rb_tz"] = junk
        assert client.post(url, {"action": "validity", "valid_until": "2031-03-06"}).status_code == 302
        expired.refresh_from_db()
        assert expired.valid_until == datetime(2031, 3, 6, 23, 59, 59, 999999, tzinfo=ZoneInfo("UTC"))


def test_the_validity_date_input_refuses_a_past_day_before_it_is_sent(client, reviewer, bank, scene):
    client.force_login(reviewer)
    expired = scene["expired"]
    url = reverse("memories:item_detail", kwargs={"bank_id": bank.public_id, "item_id": expired.public_id})
    page = client.get(url).content.decode()
    today = timezone.localdate().isoformat()
    assert page.count('name="valid_until"') == page.count(f'name="valid_until" min="{today}"') == 2
