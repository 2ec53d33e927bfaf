"""The release pages: read by members, moves by reviewers (mode and automatic
rollback by admins), refusals shown as form errors, 404 to other teams and a
login to anonymous visitors."""

from __future__ import annotations

import json
import uuid

import pytest
from django.urls import reverse

from memories.embedding.items import memory_item_embed_refresh
from memories.items.services import memory_item_edit
from memories.releases.models import BankReleasing, PublishMode, Release
from memories.review.decisions import memory_item_approve
from tests.factories import make_done_trajectory, propose_item
from tests.memories.lessons import DATES, LOGIN


@pytest.fixture
def released(bank, owner):
    """Releases 1 (login), 2 (+ dates) and 3 (login edited), published automatically."""
    trajectory = make_done_trajectory(bank)
    login = propose_item(bank, trajectory, **LOGIN)
    memory_item_approve(item=login, author=owner, confirm_duplicate=True)
    memory_item_approve(item=propose_item(bank, trajectory, **DATES), author=owner, confirm_duplicate=True)
    memory_item_edit(item=login, author=owner, content="Open the login form first, then the orders page.")
    memory_item_embed_refresh(item_id=login.pk)
    return login


def _url(bank, name="trajectories:releases", number=None):
    if number is None:
        return reverse(name, kwargs={"bank_id": bank.public_id})
    release = Release.objects.filter(bank=bank, number=number).first()
    release_id = release.public_id if release else uuid.uuid4()
    return reverse(name, kwargs={"bank_id": bank.public_id, "release_id": release_id})


def test_members_read_the_releases_and_a_releases_diff_with_word_diffs(client, bank, viewer, released):
    client.force_login(viewer)
    page = client.get(_url(bank))
    assert page.status_code == 200
    body = page.content.decode()
    assert "Production: <a" in body and "release 3" in body and 'value="publish"' not in body  # a viewer reads only
    detail = client.get(_url(bank, "trajectories:release_detail", number=3)).content.decode()
    assert "Changes since release 2" in detail and "<ins>Open</ins>" in detail and "<del>" in detail
    assert client.get(_url(bank, "trajectories:release_detail", number=2) + "?against=1").status_code == 200
    assert client.get(_url(bank, "trajectories:release_detail", number=9)).status_code == 404
    unknown = client.get(_url(bank, "trajectories:release_detail", number=2) + "?against=x")
    assert unknown.status_code == 200 and "Compared with the release before instead" in unknown.content.decode()
    assert client.get(_url(bank, "trajectories:release_detail", number=3) + "?against=1").status_code == 200
    export = client.get(_url(bank, "trajectories:release_export", number=1))
    lines = [json.loads(line) for line in b"".join(export.streaming_content).decode().splitlines()]
    assert lines[0]["release"]["number"] == 1 and [r["title"] for r in lines[1:]] == [LOGIN["title"]]
    assert client.post(_url(bank), {"action": "rollback", "number": "1"}).status_code == 403


def test_a_reviewer_rolls_back_in_one_click_and_bad_canaries_are_form_errors(client, bank, reviewer, released):
    client.force_login(reviewer)
    done = client.post(_url(bank), {"action": "rollback", "number": "1"}, follow=True)
    assert "Release 1 is production." in done.content.decode()
    bank.refresh_from_db()
    assert bank.release_production == 1 and BankReleasing.objects.get(bank=bank).mode == PublishMode.MANUAL
    again = client.post(_url(bank), {"action": "rollback", "number": "1"}, follow=True)
    assert "production already" in again.content.decode()
    bank.holdout_fraction = 0.2
    bank.save(update_fields=["holdout_fraction"])
    over = client.post(_url(bank), {"action": "canary", "number": "3", "canary_percent": "90"})
    assert (
        over.status_code == 200
        and "over 100 %" in over.content.decode()
        and 'class="errorlist"' in over.content.decode()
    )
    for bad in (
        {"action": "canary", "number": "3", "canary_percent": "ten"},
        {"action": "rollback", "number": "x"},
        {"action": "nope"},
    ):
        assert 'class="errorlist"' in client.post(_url(bank), bad).content.decode()
    started = client.post(_url(bank), {"action": "canary", "number": "3", "canary_percent": "25"}, follow=True)
    assert "canary for 25 % of retrievals" in started.content.decode()
    assert "Canary verdict" in started.content.decode() and "Not enough data yet" in started.content.decode()
    nothing = client.post(_url(bank), {"action": "publish", "note": "again"}, follow=True)
    assert "Nothing to publish" in nothing.content.decode()
    # Admin-only settings.
    assert client.post(_url(bank), {"action": "auto_rollback", "auto_rollback": "on"}).status_code == 403


def test_an_admin_sets_the_mode_and_automatic_rollback(client, bank, owner, released):
    client.force_login(owner)
    client.post(_url(bank), {"action": "mode", "mode": "manual"})
    client.post(_url(bank), {"action": "auto_rollback", "auto_rollback": "on"})
    releasing = BankReleasing.objects.get(bank=bank)
    assert (releasing.mode, releasing.auto_rollback) == (PublishMode.MANUAL, True)
    assert 'class="errorlist"' in client.post(_url(bank), {"action": "mode", "mode": "weekly"}).content.decode()


def test_another_teams_member_gets_404_and_anonymous_visitors_log_in(client, bank, stranger, released):
    urls = [
        _url(bank),
        _url(bank, "trajectories:release_detail", number=1),
        _url(bank, "trajectories:release_export", number=1),
    ]
    for url in urls:
        assert client.get(url).status_code == 302
    client.force_login(stranger)
    for url in urls:
        assert client.get(url).status_code == 404
    assert client.post(_url(bank), {"action": "rollback", "number": "1"}).status_code == 404


def test_production_serves_is_counted_up_to_the_list_cap(client, viewer, bank, monkeypatch):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from memories.items.models import ItemStatus
    from reasoningbank_site import search_paging
    from tests.factories import make_items

    make_items(bank, 5, status=ItemStatus.APPROVED)
    client.force_login(viewer)
    assert "Production serves 5 items now" in client.get(_url(bank)).content.decode()
    monkeypatch.setattr(search_paging, "LIST_COUNT_CAP", 3)
    with CaptureQueriesContext(connection) as queries:
        html = client.get(_url(bank)).content.decode()
    assert "Production serves 3+ items now" in html
    counts = [
        q["sql"] for q in queries.captured_queries if "COUNT(*)" in q["sql"] and "memories_memoryitem" in q["sql"]
    ]
    assert counts and all("LIMIT 4" in sql for sql in counts), counts  # never every served item of the bank
    assert not any('ORDER BY "memories_memoryitem"' in sql for sql in counts), counts  # nor a sort of them first
