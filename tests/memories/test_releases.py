"""Bank releases against the real database: automatic and manual publishing,
the diff, rollback, the canary's refusals, and what a retrieval serves."""

from __future__ import annotations

import pytest
from django.urls import reverse

from accounts.models import AuditEvent, RetrievalMode
from accounts.teams.banks import BANK_SETTINGS, bank_update_settings
from memories.embedding.items import memory_item_embed_refresh
from memories.items.services import memory_item_edit
from memories.releases.labels import release_canary_set, release_promote, release_rollback
from memories.releases.models import BankReleasing, PublishMode, Release
from memories.releases.publishing import release_mode_set, release_publish
from memories.releases.selectors import draft_diff, release_diff, release_get
from memories.review.decisions import memory_item_approve, memory_item_archive
from memories.serving import release_serving
from memories.serving.models import RetrievalEvent
from memories.serving.retrieval import retrieval_perform
from reasoningbank_site.errors import Conflict, Invalid, NotFound
from tests.factories import make_done_trajectory, propose_item
from tests.memories.lessons import DATES, LOGIN

QUERY = "How do I see my order history on the shop?"


def _serving(bank):
    """The bank's labels as a request loads them (a fresh bank row)."""
    bank.refresh_from_db()
    return release_serving(bank=bank)


@pytest.fixture
def two(bank):
    bank.min_similarity = -1.0  # both lessons are served whatever the query
    bank.save(update_fields=["min_similarity"])
    trajectory = make_done_trajectory(bank)
    return propose_item(bank, trajectory, **LOGIN), propose_item(bank, trajectory, **DATES)


def _served(bank) -> tuple[set[str], int | None]:
    bank.refresh_from_db()  # as a request loads it
    result = retrieval_perform(bank=bank, query=QUERY, k=5)
    return {item.title for item, _ in result.items}, result.release


def test_every_change_of_the_approved_set_publishes_a_release_at_once_by_default(bank, owner, two):
    login, dates = two
    assert Release.objects.filter(bank=bank).count() == 0  # proposals change no release
    memory_item_approve(item=login, author=owner, confirm_duplicate=True)
    memory_item_approve(item=dates, author=owner, confirm_duplicate=True)
    memory_item_edit(item=login, author=owner, content="Open the login form first, then the orders page.")
    memory_item_embed_refresh(item_id=login.pk)  # the worker's re-embedding, inline
    memory_item_archive(item=dates, author=owner)
    releases = list(
        Release.objects.filter(bank=bank)
        .order_by("number")
        .values_list("number", "added", "changed", "removed", "item_count")
    )
    assert releases == [(1, 1, 0, 0, 1), (2, 1, 0, 0, 2), (3, 0, 1, 0, 2), (4, 0, 0, 1, 1)]
    serving = _serving(bank)
    assert (serving.production, serving.production_is_draft) == (4, True)
    assert AuditEvent.objects.filter(action="release.publish").count() == 4
    diff = release_diff(old=release_get(bank=bank, number=2), new=release_get(bank=bank, number=3))
    assert [c.title for c in diff.changed] == [LOGIN["title"]] and not diff.added and not diff.removed
    ((name, runs),) = diff.changed[0].fields
    assert name == "content" and ("insert", "Open") in runs and any(op == "delete" for op, _ in runs)
    assert [
        c.title
        for c in release_diff(old=release_get(bank=bank, number=3), new=release_get(bank=bank, number=4)).removed
    ] == [DATES["title"]]
    titles, number = _served(bank)
    assert (titles, number) == ({LOGIN["title"]}, 4)
    assert RetrievalEvent.objects.get().release == 4


def test_a_manual_bank_publishes_only_when_asked_and_an_unchanged_draft_is_a_no_op(bank, owner, two):
    login, dates = two
    release_mode_set(bank=bank, mode=PublishMode.MANUAL, actor=owner)
    memory_item_approve(item=login, author=owner, confirm_duplicate=True)
    assert not Release.objects.filter(bank=bank).exists()
    assert [c.title for c in draft_diff(bank=bank).added] == [LOGIN["title"]]
    first = release_publish(bank=bank, actor=owner, note="login lesson")
    assert (first.release.number, first.release.note, first.noop) == (1, "login lesson", False)
    again = release_publish(bank=bank, actor=owner)
    assert again.noop and again.release is None and "Nothing to publish" in again.message
    memory_item_approve(item=dates, author=owner, confirm_duplicate=True)
    # Approved but not published: production (release 1) is served, without the new item.
    assert _served(bank) == ({LOGIN["title"]}, 1)
    release_publish(bank=bank, actor=owner, note="dates")
    assert _served(bank) == ({LOGIN["title"], DATES["title"]}, 2)
    with pytest.raises(Invalid, match="note: at most"):
        release_publish(bank=bank, actor=owner, note="x" * 501)


def test_rollback_serves_the_earlier_release_at_once_with_its_text_and_never_deletes(bank, owner, two):
    login, dates = two
    memory_item_approve(item=login, author=owner, confirm_duplicate=True)  # release 1
    memory_item_approve(item=dates, author=owner, confirm_duplicate=True)  # release 2
    old_content = login.content
    memory_item_edit(item=login, author=owner, title="Log in first", content="Sign in, then open the orders page.")
    memory_item_embed_refresh(item_id=login.pk)
    memory_item_archive(item=dates, author=owner)  # release 4
    message, noop = release_rollback(bank=bank, number=4, actor=owner)
    assert noop and "production already" in message
    message, noop = release_rollback(bank=bank, number=2, actor=owner)
    assert not noop and "publishes by hand" in message
    bank.refresh_from_db()
    result = retrieval_perform(bank=bank, query=QUERY, k=5)
    served = {item.title: item.content for item, _ in result.items}
    # The archived item is served again, and the edited one with its text as released.
    assert served == {LOGIN["title"]: old_content, DATES["title"]: DATES["content"]}
    assert result.release == 2
    assert BankReleasing.objects.get(bank=bank).mode == PublishMode.MANUAL
    assert AuditEvent.objects.filter(action="release.roll_back").count() == 1
    # Rolling forward is a rollback too.
    release_rollback(bank=bank, number=4, actor=owner)
    assert _served(bank) == ({"Log in first"}, 4)
    with pytest.raises(NotFound):
        release_rollback(bank=bank, number=99, actor=owner)


def test_a_canary_that_with_the_holdout_exceeds_100_percent_is_refused(bank, owner, two):
    login, dates = two
    memory_item_approve(item=login, author=owner, confirm_duplicate=True)
    memory_item_approve(item=dates, author=owner, confirm_duplicate=True)
    bank.holdout_fraction = 0.3
    bank.save(update_fields=["holdout_fraction"])
    with pytest.raises(Invalid, match=r"add up to 110 %, over 100 %\. Lower the canary to at most 70 %"):
        release_canary_set(bank=bank, number=1, fraction=0.8, actor=owner)
    with pytest.raises(Conflict, match="production already"):
        release_canary_set(bank=bank, number=2, fraction=0.5, actor=owner)
    for bad in (0, -1, 1.5, "x", None):
        with pytest.raises(Invalid, match="canary_fraction"):
            release_canary_set(bank=bank, number=1, fraction=bad, actor=owner)
    assert "canary for 70 %" in release_canary_set(bank=bank, number=1, fraction=0.7, actor=owner)
    serving = _serving(bank)
    assert (serving.canary, serving.canary_fraction, serving.production) == (1, 0.7, 2)
    assert "Release 1 is now production" in release_promote(bank=bank, actor=owner)
    assert _serving(bank).canary is None
    assert release_promote(bank=bank, actor=owner) is None  # no canary: a no-op


def test_switching_back_to_automatic_publishes_the_draft_and_stops_the_canary(bank, owner, two):
    login, dates = two
    memory_item_approve(item=login, author=owner, confirm_duplicate=True)
    release_mode_set(bank=bank, mode=PublishMode.MANUAL, actor=owner)
    memory_item_approve(item=dates, author=owner, confirm_duplicate=True)
    release_publish(bank=bank, actor=owner, canary_fraction=0.5)
    assert _serving(bank).canary == 2
    outcome = release_mode_set(bank=bank, mode=PublishMode.AUTOMATIC, actor=owner)
    assert outcome.noop is False
    serving = _serving(bank)
    assert (serving.production, serving.canary, serving.production_is_draft) == (2, None, True)
    assert release_mode_set(bank=bank, mode=PublishMode.AUTOMATIC, actor=owner).noop


def test_experience_mode_serves_the_items_of_the_production_release(bank, owner, two):
    login, dates = two
    memory_item_approve(item=login, author=owner, confirm_duplicate=True)  # release 1
    memory_item_approve(item=dates, author=owner, confirm_duplicate=True)  # release 2
    bank.retrieval_mode = RetrievalMode.EXPERIENCES
    bank.save(update_fields=["retrieval_mode"])
    assert _served(bank) == ({LOGIN["title"], DATES["title"]}, 2)
    release_rollback(bank=bank, number=1, actor=owner)
    assert _served(bank) == ({LOGIN["title"]}, 1)
    memory_item_archive(item=login, author=owner)  # the draft changes; release 1 is still served
    assert _served(bank) == ({LOGIN["title"]}, 1)


def test_a_step_level_run_keeps_the_release_of_its_first_retrieval(bank, owner, two):
    login, dates = two
    memory_item_approve(item=login, author=owner, confirm_duplicate=True)  # release 1
    release_mode_set(bank=bank, mode=PublishMode.MANUAL, actor=owner)
    memory_item_approve(item=dates, author=owner, confirm_duplicate=True)
    release_publish(bank=bank, actor=owner, canary_fraction=0.5)  # release 2, the canary
    bank.refresh_from_db()
    firsts = [retrieval_perform(bank=bank, query=QUERY, k=5) for _ in range(40)]
    by_release = {result.release: result for result in firsts}
    assert set(by_release) == {1, 2}  # both arms drawn (a miss has probability 2^-39)
    for number, first in by_release.items():
        step = retrieval_perform(bank=bank, query=QUERY, k=5, run_id=first.event.public_id, include_served=True)
        assert step.release == number and step.event.release == number
        assert {item.title for item, _ in step.items} == {item.title for item, _ in first.items}


def test_a_holdout_that_would_starve_the_running_canary_is_refused_on_the_settings_page(client, bank, owner, two):
    login, dates = two
    memory_item_approve(item=login, author=owner, confirm_duplicate=True)
    memory_item_approve(item=dates, author=owner, confirm_duplicate=True)
    release_canary_set(bank=bank, number=1, fraction=0.69, actor=owner)
    with pytest.raises(Invalid, match=r"a 95 % holdout and the running canary's 69 % add up to 164 %, over 100 %"):
        bank_update_settings(bank=bank, actor=owner, holdout_fraction=0.95)
    client.force_login(owner)
    url = reverse("accounts:bank_settings", kwargs={"bank_id": bank.public_id})
    bank.refresh_from_db()
    data = {name: getattr(bank, name) for name in BANK_SETTINGS}
    data = {name: value for name, value in data.items() if value is not False and value is not None}
    page = client.post(url, {**data, "holdout_fraction": "0.95"})
    assert page.status_code == 200 and "Lower the holdout to at most 31 %" in page.content.decode()
    bank.refresh_from_db()
    assert bank.holdout_fraction == 0.0
    # Within 100 % it is saved; with no canary any holdout is.
    bank_update_settings(bank=bank, actor=owner, holdout_fraction=0.31)
    release_promote(bank=bank, actor=owner)
    assert bank_update_settings(bank=bank, actor=owner, holdout_fraction=0.95).holdout_fraction == 0.95
