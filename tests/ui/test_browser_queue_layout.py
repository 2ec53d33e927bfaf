"""The review queue as a new reviewer meets it, in a real headless Chromium, with a bank like the demo's
(a web-shopping agent's lessons, guidelines of a few paragraphs, a run the agent and the judge disagree on):
on a phone (390×844) every filter control sits inside the filters' card and can be reached and used; on a
laptop (1,366×768) the guidelines are open at the first read, fold for good once read (remembered for that
reviewer, who can unfold them again), and then at least six queue rows show without scrolling; the count
in the heading follows the filters as they change."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse
from playwright.sync_api import expect

from memories.review.policy import review_policy_update
from tests import factories
from tests.factories import make_done_trajectory, propose_item
from tests.ui.conftest import PASSWORD

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

GUIDELINES = """\
## What to approve

- A lesson that would help on **another** task of the same kind: sort before comparing, verify the cart.
- One lesson per item; 1–3 sentences an agent can act on.

## What to reject

- Site names, literal queries, prices or strings copied from the task.
- Lessons that only restate the task or the answer.

When the agent and the judge disagree, read the steps before deciding: the judge is right about three times
in four.
"""

# Lessons like those the demo's runs distil: a title, a one-sentence description, two or three sentences of content.
LESSONS = [
    ("Sort by price before comparing candidates", "Use when a shopping task asks for the cheapest product."),
    ("Check the rating filter before the price", "Use when a task sets a minimum star rating."),
    ("Read the pack size in the product title", "Use when a task asks for a quantity of items per pack."),
    ("Apply the coupon before checking the total", "Use when a task gives a coupon code."),
    ("Confirm the shipping address on the last step", "Use when a form spans several pages."),
    ("Prefer the site's own search over browsing", "Use when the product category is deep in the menu."),
    ("Re-open the cart after changing quantities", "Use when the cart total must match a budget."),
    ("Type dates into date pickers", "Use when a form has a calendar widget."),
    ("Wait for the results count to change", "Use when a filter reloads the results in place."),
    ("Compare unit prices, not pack prices", "Use when packs of different sizes compete."),
    ("Check stock before adding to the cart", "Use when a product page shows several variants."),
    ("Stop when the task's criteria are all met", "Use when the cheapest match is found early."),
]
CONTENT = (
    "Walk down the sorted list and check every criterion the task states on each candidate; "
    "the first that meets all of them is the answer. Note each rejected candidate's failing criterion."
)


@pytest.fixture
def walkthrough(bank, owner):
    review_policy_update(bank=bank, actor=owner, guidelines=GUIDELINES, decisions_required=1, distribution="open")
    disputed = make_done_trajectory(bank, outcome="failure", verdict="success", agent="demo-web-agent/1.0")
    for i, (title, description) in enumerate(LESSONS):
        run = disputed if i == 0 else make_done_trajectory(bank, task=f"Shopping task {i}", agent="demo-web-agent/1.0")
        propose_item(bank, run, title=title, description=description, content=f"{CONTENT} ({i})")
    return reverse("memories:review", kwargs={"bank_id": bank.public_id})


def _signed_in(browser, live_server, user, width, height):
    context = browser.new_context(viewport={"width": width, "height": height})
    page = context.new_page()
    page.set_default_timeout(30_000)
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.goto(f"{live_server.url}/accounts/login/")
    page.fill("input[name=username]", user.username)
    page.fill("input[name=password]", PASSWORD)
    page.click("form button[type=submit]")
    page.wait_for_load_state()
    return context, page, errors


FILTER_CONTROLS = "form.filters input:not([type=hidden]), form.filters select, form.filters button, form.filters a"


def _outside_card(page) -> list[str]:
    """The filter controls not wholly inside the filters' card or the viewport's width (a hidden one counts)."""
    return page.evaluate(
        """(selector) => {
            const card = document.querySelector('form.filters').getBoundingClientRect();
            const width = document.documentElement.clientWidth;
            return [...document.querySelectorAll(selector)].filter(e => {
                const r = e.getBoundingClientRect();
                const shown = r.width > 0 && r.height > 0 && getComputedStyle(e).visibility !== 'hidden';
                return !shown || r.left < card.left - 0.5 || r.right > card.right + 0.5 || r.left < 0 || r.right > width;
            }).map(e => (e.name || e.textContent.trim()) + ' ' + Math.round(e.getBoundingClientRect().left)
                        + '..' + Math.round(e.getBoundingClientRect().right));
        }""",
        FILTER_CONTROLS,
    )


def test_on_a_phone_every_filter_is_inside_its_card_and_usable(browser, live_server, bank, owner, walkthrough):
    context, page, errors = _signed_in(browser, live_server, owner, 390, 844)
    try:
        page.goto(f"{live_server.url}{walkthrough}")
        card = page.locator("form.filters")
        assert card.evaluate("e => e.scrollWidth <= e.clientWidth + 1"), "the filters scroll sideways in their card"
        toggle = page.locator("form.filters [data-filters-toggle] > summary")
        if toggle.count() and toggle.is_visible():
            expect(toggle).to_contain_text("Filters")
            toggle.click()
        assert _outside_card(page) == []
        names = set(page.eval_on_selector_all(FILTER_CONTROLS, "es => es.map(e => e.name).filter(Boolean)"))
        assert {"q", "origin", "verdict", "agent", "state", "sort", "dup", "disagree", "conflict", "risky"} <= names
        # The controls that sat off-screen work: the disagreement filter narrows the rows and the count follows.
        expect(page.locator("[data-queue-count]")).to_have_text("12 proposed")
        page.locator("form.filters input[name=disagree]").check()
        expect(page.locator("#queue [data-row]")).to_have_count(1)
        expect(page.locator("[data-queue-count]")).to_have_text("1 proposed")
        page.locator("form.filters select[name=state]").select_option("stale")
        expect(page.locator("[data-queue-count]")).to_have_text("0 stale")
        expect(page.locator("#queue")).to_contain_text("No item in “Stale” matches these filters")
        assert page.evaluate("document.documentElement.scrollWidth") <= 390
        # The dashboard's disagreement link lands on the runs it counts, whose list has the same filter.
        page.goto(f"{live_server.url}{reverse('trajectories:dashboard', kwargs={'bank_id': bank.public_id})}")
        link = page.locator("[data-disagreements] a")
        expect(link).to_contain_text("1 trajectory where the agent and the judge disagree")
        link.click()
        page.wait_for_url(re.compile(r"/trajectories/\?disagree=on$"))
        expect(page.locator("#trajectory-rows [data-row]")).to_have_count(1)
        expect(page.locator("form.filters input[name=disagree]")).to_be_checked()
        assert _outside_card(page) == []
        assert errors == []
    finally:
        context.close()


def _rows_in_view(page) -> int:
    """Queue rows wholly inside the viewport, scrolled to the top."""
    return page.evaluate(
        """() => [...document.querySelectorAll('#queue [data-row]')]
            .filter(r => r.getBoundingClientRect().bottom <= window.innerHeight).length"""
    )


def test_on_a_laptop_the_guidelines_fold_once_read_and_six_rows_show(browser, live_server, bank, owner, walkthrough):
    context, page, errors = _signed_in(browser, live_server, owner, 1366, 768)
    try:
        page.goto(f"{live_server.url}{walkthrough}")
        guidelines = page.locator("[data-guidelines]")
        expect(guidelines).to_have_attribute("open", "")  # the first read: open
        expect(guidelines).to_contain_text("What to reject")
        expect(guidelines.locator("[data-guidelines-keep]")).to_be_hidden()  # only the fold is offered
        guidelines.locator("[data-guidelines-fold]").click()
        page.wait_for_load_state()
        expect(guidelines).not_to_have_attribute("open", re.compile(".*"))
        page.reload()
        expect(page.locator("[data-guidelines]")).not_to_have_attribute("open", re.compile(".*"))
        assert _rows_in_view(page) >= 6
        # Unfolded again, they stay open on the next visit.
        page.locator("[data-guidelines] > summary").click()
        expect(page.locator("[data-guidelines]")).to_have_attribute("open", "")
        page.wait_for_timeout(500)
        page.reload()
        expect(page.locator("[data-guidelines]")).to_have_attribute("open", "")
        # Another reviewer has not read them yet: open for them.
        other = factories.make_member(bank.team, "reviewer", user=factories.make_user("newcomer"))
        context2, page2, errors2 = _signed_in(browser, live_server, other, 1366, 768)
        try:
            page2.goto(f"{live_server.url}{walkthrough}")
            expect(page2.locator("[data-guidelines]")).to_have_attribute("open", "")
            assert errors2 == []
        finally:
            context2.close()
        assert errors == []
    finally:
        context.close()
