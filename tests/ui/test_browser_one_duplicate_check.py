"""The one near-duplicate check in real Chromium: a twin below the bank's
merge threshold is shown on both queue rows and in the focus view before
any key is pressed; when the twin has the very same text (similarity 1.00),
the approval dialog's default (Enter) is merge, not keep both."""

from __future__ import annotations

import pytest

from accounts.models import Role
from memories.embedding.items import memory_item_embed_refresh
from memories.items.models import ItemOrigin, ItemStatus, MemoryItem
from memories.items.services import ProposedItem, memory_item_create, memory_item_edit, memory_items_propose
from tests import factories

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

LESSON = dict(
    title="Prefer the official source",
    description="Use when a schedule question comes up.",
    content="Check the institution's own pages before answering.",
)
# The same lesson in other words: similarity 0.91, below the default merge threshold (0.92).
NEAR = dict(
    title="Prefer official sources",
    description="Use when a schedule question comes up.",
    content="Check the official website of the institution before you answer.",
)


def test_a_twin_is_shown_on_both_rows_and_in_the_focus_view_before_a_key(page, live_server, login, bank, owner):
    from playwright.sync_api import expect

    reviewer = factories.make_member(bank.team, Role.REVIEWER)
    (first,) = memory_items_propose(bank=bank, proposals=[ProposedItem(**LESSON)], origin=ItemOrigin.SUCCESS)
    second = memory_item_create(bank=bank, author=owner, **NEAR)  # written by hand a moment later
    similarity = f"{MemoryItem.objects.get(pk=second.pk).near_duplicates[0]['similarity']:.2f}"

    login(page, live_server, reviewer, f"/banks/{bank.public_id}/review/")
    for item, other in ((first, NEAR), (second, LESSON)):
        twin = page.locator(f"#item-{item.public_id} [data-twin]")
        expect(twin).to_have_text(f"possible duplicate of “{other['title']}”, similarity {similarity}")
    twin = page.locator(f"#item-{first.public_id} [data-twin]")
    assert twin.get_attribute("href") == f"/banks/{bank.public_id}/review/{second.public_id}/"

    page.goto(f"{live_server.url}/banks/{bank.public_id}/review/{first.public_id}/")
    notice = page.locator("[data-item] [data-twin]")
    expect(notice).to_have_text(
        f"Possible duplicate of “{NEAR['title']}” (proposed), similarity {similarity} · compare"
    )
    expect(notice.get_by_role("link", name="compare")).to_have_attribute(
        "href", f"/banks/{bank.public_id}/items/{first.public_id}/compare/{second.public_id}/"
    )
    assert MemoryItem.objects.filter(bank=bank, status=ItemStatus.PROPOSED).count() == 2  # nothing decided


def test_at_similarity_one_the_dialogs_default_is_merge(page, live_server, login, bank, owner):
    from playwright.sync_api import expect

    served = memory_item_create(bank=bank, author=owner, status=ItemStatus.APPROVED, **LESSON)
    other = memory_item_create(
        bank=bank,
        author=owner,
        title="Type dates into date picker inputs",
        description="Use when a form asks for a date.",
        content="Type the date as YYYY-MM-DD.",
    )
    twin = memory_item_edit(item=other, author=owner, **LESSON)  # edited into the very same text
    memory_item_embed_refresh(item_id=twin.pk)  # what the worker does after the edit

    login(page, live_server, owner, f"/banks/{bank.public_id}/review/{twin.public_id}/")
    expect(page.locator("[data-item] [data-twin]")).to_contain_text("similarity 1.00")
    page.keyboard.press("a")
    dialog = page.locator("dialog[data-dup-confirm]")
    expect(dialog).to_contain_text("similarity 1.00")
    expect(dialog.locator("[data-dup-merge]")).to_be_focused()
    page.keyboard.press("Enter")
    expect(page.get_by_text("Nothing to review.")).to_be_visible()  # merged: the queue is empty
    twin.refresh_from_db()
    assert twin.status == ItemStatus.SUPERSEDED
    assert served.supports.count() == 1
