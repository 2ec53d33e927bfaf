"""The review queue worked by keyboard only, in a real headless Chromium: 20 items
decided — approved, rejected with a reason, edited then approved — with
page.keyboard alone (no Tab, no clicks, no focus() from the test), keys
pressed while an action is in flight, and Undo (the toast's button, the
``u`` key, and Revert in the item's history). Every test ends on what the
database holds."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from accounts.models import ApiToken, Role
from accounts.tokens.services import api_token_create
from memories.items.models import ItemStatus, MemoryItem
from memories.items.services import memory_item_create
from memories.review.views import queue
from tests import factories

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

FOCUSED = re.compile(r"\bfocused\b")
PAGE_SIZE = 8


@pytest.fixture
def reviewer_user(team):
    return factories.make_member(team, Role.REVIEWER)


@pytest.fixture
def small_pages(monkeypatch):
    """Queue pages of PAGE_SIZE rows, so n / p have pages to go to."""
    monkeypatch.setattr(queue, "PAGE_SIZE", PAGE_SIZE)


# What each lesson teaches: twenty different lessons (cosine similarity ≤ 0.58 between any two, edited or not).
# Texts that differ only by a number or name are near-duplicates of each other: once they are embedded, approving
# one is refused as a duplicate of the one approved before, and the flow stops.
LESSONS = [
    ("the login form", "Submit the username and password, then check the account menu appears."),
    ("paginated tables", "Click next until it disappears and collect the rows of every page."),
    ("date pickers", "Type the date as YYYY-MM-DD into the field instead of clicking months."),
    ("file uploads", "Wait for the progress bar to reach 100% before pressing save."),
    ("shopping carts", "Empty the cart first so old items do not end up in the order."),
    ("search filters", "Clear the previous filters before applying a new price range."),
    ("cookie banners", "Dismiss the consent dialog before clicking anything under it."),
    ("modal dialogs", "Close the dialog with its own button; Escape may discard the form."),
    ("currency fields", "Read the currency symbol before comparing two prices."),
    ("email verification", "Open the newest message; older codes have expired."),
    ("dropdown menus", "Scroll inside the list: options below the fold are not rendered yet."),
    ("map widgets", "Type the address in the search box rather than dragging the pin."),
    ("time zones", "Convert the meeting time to the attendee's zone before booking."),
    ("CSV exports", "Pick UTF-8 in the export dialog or accents come out garbled."),
    ("infinite scroll", "Scroll to the bottom repeatedly until no new posts load."),
    ("two-factor codes", "Enter the code within thirty seconds or request a new one."),
    ("flight searches", "Tick flexible dates to see cheaper fares around the chosen day."),
    ("recipe scaling", "Multiply every ingredient by the same factor, including the spices."),
    ("git merge conflicts", "Keep both sides, then remove the conflict markers by hand."),
    ("hotel bookings", "Check whether breakfast is included before comparing room prices."),
]

OTHERS = [
    ("parcel tracking", "Copy the tracking number from the shipping email, not from the invoice."),
    ("password resets", "Use the link in the reset email within an hour; it expires after that."),
    ("museum opening hours", "Look at the holiday schedule: the regular hours do not apply on public holidays."),
    ("spreadsheet formulas", "Anchor the cell references with dollar signs before copying the formula down."),
]


def _items(bank, titles: list[str]) -> list[MemoryItem]:
    """Proposed items in queue order (oldest first), one per title, through the service (version 1 "created"):
    "Lesson NN" teaches LESSONS[NN], the others each one of OTHERS."""
    items = []
    others = iter(OTHERS)
    for title in titles:
        topic, content = LESSONS[int(title.split()[1])] if title.startswith("Lesson ") else next(others)
        items.append(
            memory_item_create(bank=bank, title=title, description=f"When working with {topic}", content=content)
        )
    return items


def _row(page, item):
    return page.locator(f"#item-{item.public_id}")


def _type_line(page, text: str):
    page.keyboard.type(text)
    page.keyboard.press("Enter")


def test_twenty_items_decided_with_the_keyboard_only(page, live_server, login, bank, reviewer_user, small_pages):
    # 20 lessons, and 3 unrelated items between them that the search leaves out: the focus
    # view's Next must keep to the filtered queue, so they must still be proposed at the end.
    titles = [f"Lesson {i:02d}" for i in range(20)]
    for position, distractor in ((9, "Unrelated note A"), (14, "Unrelated note B"), (20, "Unrelated note C")):
        titles.insert(position, distractor)
    created = _items(bank, titles)
    lessons = [item for item in created if item.title.startswith("Lesson")]
    distractors = [item for item in created if item.title.startswith("Unrelated")]
    intended: dict[int, tuple] = {}  # pk → (status, reason, title)
    url = f"/banks/{bank.public_id}/review/"
    login(page, live_server, reviewer_user, url)

    # "/" goes to the search; Enter filters the queue, and the rows take the keys at once.
    page.keyboard.press("/")
    expect(page.locator("#id_q")).to_be_focused()
    _type_line(page, "lesson")
    page.wait_for_url(re.compile(r"[?&]q=lesson"))
    page.wait_for_load_state("networkidle")  # the search's own delayed request, if it fired, is in too
    expect(page.locator("[data-rows] [data-row]")).to_have_count(PAGE_SIZE)
    expect(page.locator("#id_q")).not_to_be_focused()
    page.keyboard.press("j")
    expect(_row(page, lessons[0])).to_have_class(FOCUSED)

    # Page 1: a / r+reason, each moving on to the next row still to decide.
    plan = ["a", "r", "a", "r", "a", "a", "r", "a"]
    for item, key in zip(lessons[:PAGE_SIZE], plan, strict=True):
        expect(_row(page, item)).to_have_class(FOCUSED)
        page.keyboard.press(key)
        if key == "r":
            reason = f"Too vague: {item.title}"
            expect(_row(page, item).locator("input[name=reason]")).to_be_focused()
            _type_line(page, reason)
            expect(_row(page, item)).to_have_attribute("data-status", "rejected")
            intended[item.pk] = (ItemStatus.REJECTED, reason, item.title)
        else:
            expect(_row(page, item)).to_have_attribute("data-status", "approved")
            intended[item.pk] = (ItemStatus.APPROVED, "", item.title)
    # Every row on the page is decided: the focus stays on the last; a says why nothing happens.
    expect(_row(page, lessons[PAGE_SIZE - 1])).to_have_class(FOCUSED)
    page.keyboard.press("a")
    expect(page.locator("#toast")).to_contain_text("Already approved")
    page.keyboard.press("j")
    expect(page.locator("#toast")).to_contain_text("n for the next page")

    # n / p: the rest of the filtered queue is on pages 1 and 2 now.
    page.keyboard.press("n")
    page.wait_for_url(re.compile(r"page=2"))
    expect(page.locator("[data-rows] [data-row]")).to_have_count(4)
    expect(page.locator("[data-rows] [data-row]").first).to_have_id(f"item-{lessons[16].public_id}")
    page.keyboard.press("p")
    page.wait_for_url(re.compile(r"page=1"))
    expect(page.locator("[data-rows] [data-row]").first).to_have_id(f"item-{lessons[8].public_id}")
    page.keyboard.press("j")
    expect(_row(page, lessons[8])).to_have_class(FOCUSED)

    # e opens the focus view's edit form with the cursor in the title; Esc cancels it.
    page.keyboard.press("e")
    page.wait_for_url(re.compile(rf"/review/{lessons[8].public_id}/\?edit=1&q=lesson$"))
    expect(page.locator("#edit-form [name=title]")).to_be_focused()
    page.keyboard.press("Escape")
    expect(page.locator("#edit-form")).to_have_count(0)
    expect(page.locator("h1.itemtitle")).to_have_text(lessons[8].title)
    expect(page.locator("[data-queue]")).to_have_attribute("href", re.compile(r"\?q=lesson$"))

    # The rest in the focus view, whose Next keeps to the filtered queue.
    plan = ["e", "r", "a", "e", "a", "r", "e", "a", "r", "a", "e", "a"]
    remaining = lessons[8:]
    for n, (item, key) in enumerate(zip(remaining, plan, strict=True)):
        expect(page.locator("h1.itemtitle")).to_have_text(item.title)
        if key == "e":
            page.keyboard.press("e")
            expect(page.locator("#edit-form [name=title]")).to_be_focused()
            page.keyboard.press("Control+a")
            edited = f"{item.title}, edited by keyboard"
            _type_line(page, edited)
            expect(page.locator("h1.itemtitle")).to_have_text(edited)
            page.keyboard.press("a")
            intended[item.pk] = (ItemStatus.APPROVED, "", edited)
        elif key == "r":
            page.keyboard.press("r")
            expect(page.locator("#reject [name=reason]")).to_be_focused()
            reason = f"Duplicate of an older lesson ({item.title})"
            _type_line(page, reason)
            intended[item.pk] = (ItemStatus.REJECTED, reason, item.title)
        else:
            page.keyboard.press("a")
            intended[item.pk] = (ItemStatus.APPROVED, "", item.title)
        if n + 1 < len(remaining):
            page.wait_for_url(re.compile(rf"/review/{remaining[n + 1].public_id}/\?q=lesson$"))
    # After the last one: back to the (filtered, now empty) queue.
    page.wait_for_url(re.compile(r"/review/\?q=lesson$"))
    expect(page.locator("#queue")).to_contain_text("No proposed item matches these filters")

    assert len(intended) == 20
    got = {
        pk: (status, reason, title)
        for pk, status, reason, title in MemoryItem.objects.filter(bank=bank).values_list(
            "pk", "status", "status_reason", "title"
        )
    }
    assert {pk: got[pk] for pk in intended} == intended
    assert {got[d.pk][0] for d in distractors} == {ItemStatus.PROPOSED}
    edited = MemoryItem.objects.filter(bank=bank, title__endswith="edited by keyboard")
    assert edited.count() == 4
    for item in edited:
        assert list(item.versions.values_list("action", flat=True)) == ["created", "edited", "approved"]


def test_keys_pressed_while_an_action_runs_are_not_applied(page, live_server, login, bank, reviewer_user):
    items = _items(bank, ["First", "Second", "Third"])
    login(page, live_server, reviewer_user, f"/banks/{bank.public_id}/review/")
    held = []

    def hold_posts(route):
        if route.request.method == "POST":
            held.append(route)
        else:
            route.continue_()

    page.route(re.compile(r"/review/$"), hold_posts)
    page.keyboard.press("j")
    expect(_row(page, items[0])).to_have_class(FOCUSED)
    page.keyboard.press("a")
    # The action shows progress and is disabled while its request runs...
    expect(_row(page, items[0]).locator("button.ok")).to_be_disabled()
    assert len(held) == 1
    # ... and keys pressed meanwhile are not applied to another item.
    page.keyboard.press("j")
    page.keyboard.press("a")
    expect(page.locator("#toast")).to_contain_text("Still saving")
    assert len(held) == 1  # the second "a" sent no request
    held.pop().continue_()
    expect(_row(page, items[0])).to_have_attribute("data-status", "approved")
    expect(_row(page, items[1])).to_have_class(FOCUSED)
    page.unroute(re.compile(r"/review/$"))
    statuses = dict(MemoryItem.objects.filter(bank=bank).values_list("title", "status"))
    assert statuses == {"First": "approved", "Second": "proposed", "Third": "proposed"}

    # Once it is done, the keys work again: on the item that has the focus.
    page.keyboard.press("a")
    expect(_row(page, items[1])).to_have_attribute("data-status", "approved")
    statuses = dict(MemoryItem.objects.filter(bank=bank).values_list("title", "status"))
    assert statuses == {"First": "approved", "Second": "approved", "Third": "proposed"}


def test_undo_with_the_toast_button_and_the_u_key(page, live_server, login, bank, reviewer_user):
    first, second, _third = _items(bank, ["First", "Second", "Third"])
    login(page, live_server, reviewer_user, f"/banks/{bank.public_id}/review/")
    toast = page.locator("#toast")

    # Queue: a, then u takes it back; the row is proposed again and has the focus.
    page.keyboard.press("j")
    page.keyboard.press("a")
    expect(_row(page, first)).to_have_attribute("data-status", "approved")
    expect(toast).to_contain_text("Approved “First”.")
    page.keyboard.press("u")
    expect(_row(page, first)).to_have_attribute("data-status", "proposed")
    expect(_row(page, first)).to_have_class(FOCUSED)
    expect(toast).to_contain_text("Reverted")
    first.refresh_from_db()
    assert (first.status, first.approved_by) == (ItemStatus.PROPOSED, None)
    assert list(first.versions.values_list("action", flat=True)) == ["created", "approved", "reverted"]

    # r with a reason, then the toast's Undo button.
    page.keyboard.press("r")
    _type_line(page, "Says nothing new")
    expect(_row(page, first)).to_have_attribute("data-status", "rejected")
    toast.get_by_role("button", name="Undo").click()
    expect(_row(page, first)).to_have_attribute("data-status", "proposed")
    first.refresh_from_db()
    assert (first.status, first.status_reason) == (ItemStatus.PROPOSED, "")

    # The focus view: a decision moves on to the next item; u there brings the decided one back.
    page.keyboard.press("Enter")
    page.wait_for_url(re.compile(rf"/review/{first.public_id}/$"))
    page.keyboard.press("a")
    page.wait_for_url(re.compile(rf"/review/{second.public_id}/$"))
    expect(toast).to_contain_text("Approved “First”.")
    page.keyboard.press("u")
    page.wait_for_url(re.compile(rf"/review/{first.public_id}/$"))
    expect(page.locator("#item-panel .badge.proposed")).to_be_visible()
    first.refresh_from_db()
    assert first.status == ItemStatus.PROPOSED
    assert list(first.versions.values_list("action", flat=True)) == [
        "created",
        "approved",
        "reverted",
        "rejected",
        "reverted",
        "approved",
        "reverted",
    ]


def test_revert_from_the_history_and_a_revert_that_is_no_longer_valid(page, live_server, login, bank, reviewer_user):
    (item,) = _items(bank, ["Check the date format"])
    login(page, live_server, reviewer_user, f"/banks/{bank.public_id}/items/{item.public_id}/")
    page.get_by_role("button", name="Approve").click()
    expect(page.locator("#item-panel .badge.approved").first).to_be_visible()
    page.get_by_role("button", name="Archive").click()
    expect(page.locator("#item-panel .badge.archived").first).to_be_visible()
    # The archiving supersedes the approval: its Revert is refused, saying why.
    page.locator(".history li", has_text="approved by").get_by_role("button", name="Revert").click()
    expect(page.locator("#item-panel")).to_contain_text("can no longer be reverted: it was archived by")
    item.refresh_from_db()
    assert item.status == ItemStatus.ARCHIVED
    # The archiving is: reverting it serves the item again.
    page.locator(".history li", has_text="archived by").get_by_role("button", name="Revert").click()
    expect(page.locator("#item-panel")).to_contain_text("is approved again")
    item.refresh_from_db()
    assert item.status == ItemStatus.APPROVED and item.approved_by == reviewer_user
    assert list(item.versions.values_list("action", flat=True)) == ["created", "approved", "archived", "reverted"]


def test_revoking_a_token_asks_first_and_enter_confirms(page, live_server, login, bank, owner):
    issued = api_token_create(bank=bank, name="shop agent", scopes=["retrieve"])
    login(page, live_server, owner, f"/banks/{bank.public_id}/tokens/")
    page.get_by_role("button", name="Revoke…").click()
    expect(page.locator("h1")).to_have_text("Revoke token “shop agent”?")
    assert ApiToken.objects.get(pk=issued.token.pk).revoked_at is None  # asking changed nothing
    expect(page.get_by_role("button", name="Revoke the token")).to_be_focused()
    page.keyboard.press("Enter")
    page.wait_for_url(re.compile(rf"/banks/{bank.public_id}/tokens/$"))
    expect(page.locator(".messages")).to_contain_text(f"Token {issued.token.prefix}… revoked.")
    assert ApiToken.objects.get(pk=issued.token.pk).revoked_at is not None
