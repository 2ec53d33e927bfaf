"""The releases page's draft diff: read from the items changed since the newest
whole-draft release (an index range, not the approved set), equal to what
publishing then writes, and not computed at all for a bank that publishes
automatically."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import connection
from django.urls import reverse
from django.utils import timezone

from memories.items.models import ItemStatus, MemoryItem
from memories.items.services import memory_item_edit
from memories.learning.validity import memory_item_validity_set
from memories.releases.models import PublishMode, Release
from memories.releases.publishing import release_mode_set, release_publish
from memories.releases.selectors import (
    DRAFT_SLACK,
    draft_changed_items,
    draft_diff,
    draft_versions,
    items_changed_since,
    open_versions,
    release_diff,
    versions_diff,
)
from memories.review.decisions import memory_item_approve, memory_item_archive
from tests.factories import bulk_items, make_done_trajectory, propose_item
from tests.memories.lessons import DATES, LOGIN


def _shape(diff) -> dict:
    return {
        part: sorted((c.public_id, c.old_version, c.new_version) for c in getattr(diff, part))
        for part in ("added", "changed", "removed")
    }


def _age(items, by: timedelta) -> None:
    """Stamp ``items`` as last changed ``by`` before now (what an item untouched since then looks like)."""
    MemoryItem.objects.filter(pk__in=[i.pk for i in items]).update(updated_at=timezone.now() - by)


def test_the_draft_diff_read_from_changed_items_is_what_publishing_then_writes(bank, owner):
    release_mode_set(bank=bank, mode=PublishMode.MANUAL, actor=owner)
    trajectory = make_done_trajectory(bank)
    kept, edited, archived, expiring, lapsing = (
        propose_item(bank, trajectory, title=f"Lesson {name}", content=f"Do {name} first.")
        for name in ("kept", "edited", "archived", "expiring", "lapsing")
    )
    for item in (kept, edited, archived, expiring, lapsing):
        memory_item_approve(item=item, author=owner, confirm_duplicate=True)
    memory_item_validity_set(item=lapsing, author=owner, valid_until=timezone.now() + timedelta(days=30))
    first = release_publish(bank=bank, actor=owner, note="first").release
    assert first.whole_draft
    # Untouched for longer than the slack before the release: not read again.
    _age([kept, edited, archived, expiring, lapsing], by=DRAFT_SLACK * 3)
    Release.objects.filter(pk=first.pk).update(created_at=timezone.now() - DRAFT_SLACK * 2)

    added = propose_item(bank, trajectory, title="Lesson added", content="Do the new thing.")
    memory_item_approve(item=added, author=owner, confirm_duplicate=True)
    memory_item_edit(item=edited, author=owner, content="Do the edited thing, then check.")
    memory_item_archive(item=archived, author=owner)
    memory_item_validity_set(item=expiring, author=owner, valid_until=timezone.now() + timedelta(days=1))
    # Time passes: ``lapsing``'s validity runs out with no write at all.
    MemoryItem.objects.filter(pk=lapsing.pk).update(valid_until=timezone.now() - timedelta(minutes=1))

    scope = set(draft_changed_items(bank=bank))
    assert kept.pk not in scope and {added.pk, edited.pk, archived.pk, lapsing.pk} <= scope
    shown = draft_diff(bank=bank)
    whole = versions_diff(open_versions(bank=bank), draft_versions(bank=bank))
    assert _shape(shown) == _shape(whole)
    assert {c.title for c in shown.added} == {"Lesson added"}
    assert {c.title for c in shown.changed} == {"Lesson edited"}  # a new validity is not a change of text
    assert {c.title for c in shown.removed} == {"Lesson archived", "Lesson lapsing"}

    second = release_publish(bank=bank, actor=owner, note="second").release
    assert _shape(release_diff(old=first, new=second)) == _shape(shown)
    assert draft_diff(bank=bank).empty


def test_an_automatic_release_of_a_few_items_is_not_an_anchor(bank, owner):
    trajectory = make_done_trajectory(bank)
    one, two = propose_item(bank, trajectory, **LOGIN), propose_item(bank, trajectory, **DATES)
    memory_item_approve(item=one, author=owner, confirm_duplicate=True)  # release 1, the whole draft
    memory_item_approve(item=two, author=owner, confirm_duplicate=True)  # release 2: only ``two``
    assert list(Release.objects.filter(bank=bank).order_by("number").values_list("whole_draft", flat=True)) == [
        True,
        False,
    ]
    release_mode_set(bank=bank, mode=PublishMode.MANUAL, actor=owner)
    memory_item_archive(item=one, author=owner)
    assert {c.title for c in draft_diff(bank=bank).removed} == {LOGIN["title"]}


def test_an_automatic_bank_shows_no_draft_diff_and_a_manual_one_does(client, bank, owner):
    trajectory = make_done_trajectory(bank)
    item = propose_item(bank, trajectory, title="Lesson page")
    memory_item_approve(item=item, author=owner, confirm_duplicate=True)
    client.force_login(owner)
    url = reverse("trajectories:releases", kwargs={"bank_id": bank.public_id})
    page = client.get(url).content.decode()
    assert "data-draft-automatic" in page and "Publishing is automatic" in page
    release_mode_set(bank=bank, mode=PublishMode.MANUAL, actor=owner)
    memory_item_archive(item=item, author=owner)
    page = client.get(url).content.decode()
    assert "data-draft-automatic" not in page and "0 added, 0 changed, 1 removed" in page


@pytest.mark.django_db
def test_the_changed_items_are_read_through_the_bank_s_change_and_validity_indexes(bank):
    bulk_items(bank, 4000, status=ItemStatus.APPROVED)
    MemoryItem.objects.filter(bank=bank).update(
        updated_at=timezone.now() - timedelta(days=200), valid_until=timezone.now() + timedelta(days=200)
    )
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE memories_memoryitem")
    plan = items_changed_since(bank_id=bank.pk, since=timezone.now() - timedelta(hours=2)).values("pk").explain()
    assert "memoryitem_bank_updated" in plan and "memoryitem_bank_valid_until" in plan, plan
    assert "Seq Scan on memories_memoryitem" not in plan, plan
