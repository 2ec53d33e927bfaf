"""The review UI in a real headless Chromium (Debian's /usr/bin/chromium via
Playwright) against pytest-django's live server: log in through the login
page, work the queue with the keyboard, edit and approve, bulk approve,
relabel and watch re-distilled items arrive, and the playground.

The LLM is the local fake OpenAI-compatible server (tests/fake_llm.py); Celery
runs eagerly, so the re-distillation triggered by a relabel runs in the live
server's request thread. A failing test leaves a screenshot in test-artifacts/."""

from __future__ import annotations

import re

import pytest

from accounts.models import Role
from memories.items.models import ItemStatus, MemoryItem
from memories.items.services import memory_item_create
from tests import factories
from tests.factories import bulk_items, make_done_trajectory, propose_item

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

FAILURE_ITEMS = """The agent failed because it trusted a stale cache.

# Memory Item 1
## Title
Distrust cached schedules
## Description
Use when a page shows opening hours that may be out of date.
## Content
Compare the cached schedule with the venue's announcement page before answering.
## Steps
3
"""


@pytest.fixture
def reviewer_user(team):
    return factories.make_member(team, Role.REVIEWER)


def test_work_the_queue_with_the_keyboard(page, live_server, login, bank, reviewer_user):
    items = bulk_items(bank, 3)
    url = f"/banks/{bank.public_id}/review/"
    login(page, live_server, reviewer_user, url)
    # Typing in the search field never triggers shortcuts.
    page.fill("#id_q", "")
    page.press("#id_q", "a")
    page.keyboard.press("Escape")
    assert MemoryItem.objects.filter(bank=bank, status="approved").count() == 0
    page.keyboard.press("Backspace")
    page.wait_for_load_state("networkidle")
    page.keyboard.press("Escape")  # Esc leaves the text field; shortcuts work again
    assert page.evaluate("document.activeElement === document.body")

    page.keyboard.press("?")
    assert page.locator("#cheatsheet").is_visible()
    page.keyboard.press("Escape")
    assert not page.locator("#cheatsheet").is_visible()

    page.keyboard.press("j")
    first = page.locator(f"#item-{items[0].public_id}")
    assert "focused" in first.get_attribute("class")
    page.keyboard.press("a")
    page.locator(f"#item-{items[0].public_id} .badge.approved").wait_for()
    # Focus moved on to the next row by itself: "a" again approves the second.
    page.locator(f"#item-{items[1].public_id}.focused").wait_for()
    page.keyboard.press("a")
    page.locator(f"#item-{items[1].public_id} .badge.approved").wait_for()
    statuses = dict(MemoryItem.objects.filter(bank=bank).values_list("title", "status"))
    assert statuses == {"Lesson 0": "approved", "Lesson 1": "approved", "Lesson 2": "proposed"}

    # r opens the focused row's reason field; Enter rejects.
    page.locator(f"#item-{items[2].public_id}.focused").wait_for()
    page.keyboard.press("r")
    page.keyboard.type("too vague to act on")
    page.keyboard.press("Enter")
    page.locator(f"#item-{items[2].public_id} .badge.rejected").wait_for()
    rejected = MemoryItem.objects.get(pk=items[2].pk)
    assert (rejected.status, rejected.status_reason) == ("rejected", "too vague to act on")


def test_edit_inline_then_approve(page, live_server, login, bank, reviewer_user):
    trajectory = make_done_trajectory(bank)
    item = propose_item(bank, trajectory)
    login(page, live_server, reviewer_user, f"/banks/{bank.public_id}/review/{item.public_id}/")
    page.locator("#trajectory-steps .step").first.wait_for()  # the source trajectory loads beside the item
    assert page.locator("#step-2.cited").count() == 1
    page.keyboard.press("e")
    page.locator("#edit-form #id_title").fill("Read the venue's own schedule page")
    page.locator("#edit-form button[type=submit]").click()
    page.locator("h1.itemtitle", has_text="Read the venue's own schedule page").wait_for()
    page.keyboard.press("a")
    page.wait_for_url(re.compile(r"/review/$"))  # last in the queue: back to the (now empty) queue
    assert page.locator("text=Nothing to review").is_visible()
    item.refresh_from_db()
    assert (item.title, item.status) == ("Read the venue's own schedule page", ItemStatus.APPROVED)
    assert list(item.versions.values_list("action", flat=True)) == ["created", "edited", "approved"]


def test_bulk_approve(page, live_server, login, bank, reviewer_user):
    bulk_items(bank, 5)
    login(page, live_server, reviewer_user, f"/banks/{bank.public_id}/review/")
    page.check("[data-check-all]")
    page.click("#bulk button[value=approve]")
    page.locator("text=5 items approved.").wait_for()
    assert MemoryItem.objects.filter(bank=bank, status="approved").count() == 5


def test_relabel_and_watch_redistilled_items(page, live_server, login, bank, reviewer_user, fake_llm, eager_celery):
    trajectory = make_done_trajectory(bank, verdict="success", status="done")
    old = propose_item(bank, trajectory, title="Trust the cached schedule")
    fake_llm.responder = lambda messages: FAILURE_ITEMS
    login(page, live_server, reviewer_user, f"/banks/{bank.public_id}/trajectories/{trajectory.public_id}/")
    page.check("input[name=label][value=failure]")
    page.fill("textarea[name=reason]", "The cache was a week old; Sunday hours had changed.")
    page.click("form.relabel button[type=submit]")
    page.locator("#derived .itemtitle", has_text="Distrust cached schedules").wait_for()
    page.locator("#derived .badge.failure.big").wait_for()
    old.refresh_from_db()
    assert old.status == ItemStatus.SUPERSEDED
    assert page.locator("#derived .judgment.source-human", has_text="week old").count() == 1
    new = MemoryItem.objects.get(bank=bank, title="Distrust cached schedules")
    assert (new.status, new.verdict_label) == ("proposed", "failure")


def test_playground_shows_an_approved_item(page, live_server, login, bank, owner):
    viewer = factories.make_member(bank.team, Role.VIEWER)
    memory_item_create(
        bank=bank,
        title="Confirm opening hours on the official site",
        description="Use for questions about when a place is open.",
        content="Look for the opening hours on the venue's own website.",
        author=owner,
        status="approved",
    )
    login(page, live_server, viewer, f"/banks/{bank.public_id}/playground/")
    page.fill("#id_q", "When is the science museum open on Sundays?")
    page.click("form button.primary")
    page.locator("#results .itemtitle", has_text="Confirm opening hours").wait_for()
    assert "Confirm opening hours" in page.locator("#system-block").inner_text()
    assert page.locator("#results .score").first.inner_text().startswith("0.")


def test_a_failed_htmx_request_shows_a_toast_on_a_page_without_shortcuts(page, live_server, login, bank, owner):
    # The error toast comes from app.js (every page), not from keyboard.js (pages with the cheatsheet).
    login(page, live_server, owner, f"/banks/{bank.public_id}/playground/")
    assert page.locator("#cheatsheet").count() == 0
    page.evaluate(f"htmx.ajax('GET', '/banks/{bank.public_id}/no-such-page/', '#results')")
    page.locator("#toast", has_text="That did not work (HTTP 404)").wait_for()
