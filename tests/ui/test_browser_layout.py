"""Layout of the review flow in a real headless Chromium, at a phone's 390×844
and a laptop's 1,280 px: no page scrolls sideways
(``document.documentElement.scrollWidth <= innerWidth``), even with a
120-character team name and long words in titles."""

from __future__ import annotations

import pytest
from django.urls import reverse

from accounts.models import Team
from memories.items.models import ItemStatus, MemoryItem
from tests import factories
from tests.factories import make_done_trajectory, propose_item
from tests.ui.conftest import PASSWORD

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

LONG_TEAM_NAME = ("Research and development of the checkout-flow evaluation agents " * 2)[:120]
LONG_WORD = "Supercalifragilistic-expialidocious-configuration-value"


@pytest.fixture
def flow(bank, owner):
    Team.objects.filter(pk=bank.team_id).update(name=LONG_TEAM_NAME)
    trajectory = make_done_trajectory(bank, outcome="failure", task="Find the hours " + LONG_WORD * 2)
    factories.record_verdict(trajectory, "success", rationale="Matches the site. " + LONG_WORD)
    item = propose_item(bank, trajectory, title="Compare the fare calendar first " + LONG_WORD)
    MemoryItem.objects.create(  # a rejected look-alike, so the focus view shows that panel too
        bank=bank,
        title="Check the fare calendar " + LONG_WORD,
        description="d",
        content="c",
        status=ItemStatus.REJECTED,
        status_reason="Out of date " + LONG_WORD * 2,
        embedding=item.embedding,
    )
    b = {"bank_id": bank.public_id}
    return {
        "home": reverse("accounts:home"),
        "team": reverse("accounts:team", kwargs={"team_id": bank.team.public_id}),
        "dashboard": reverse("trajectories:dashboard", kwargs=b),
        "review queue": reverse("memories:review", kwargs=b),
        "disagreements": reverse("memories:review", kwargs=b) + "?disagree=on",
        "focus view": reverse("memories:review_focus", kwargs={**b, "item_id": item.public_id}),
        "item": reverse("memories:item_detail", kwargs={**b, "item_id": item.public_id}),
        "trajectory": reverse("trajectories:detail", kwargs={**b, "trajectory_id": trajectory.public_id}),
        "judge": reverse("trajectories:judge", kwargs=b),
        "reviewers": reverse("trajectories:reviewers", kwargs=b),
        "assignments": reverse("memories:review_assignments", kwargs=b),
    }


def _signed_in(browser, live_server, user, width, height):
    context = browser.new_context(viewport={"width": width, "height": height})
    page = context.new_page()
    page.set_default_timeout(30_000)
    page.goto(f"{live_server.url}/accounts/login/")
    page.fill("input[name=username]", user.username)
    page.fill("input[name=password]", PASSWORD)
    page.click("form button[type=submit]")
    page.wait_for_load_state()
    return context, page


def _too_wide(page, live_server, pages: dict[str, str]) -> dict:
    found = {}
    for name, url in pages.items():
        page.goto(f"{live_server.url}{url}")
        page.wait_for_load_state("networkidle")  # the focus view's evidence and comments load after the page
        width, inner = page.evaluate("[document.documentElement.scrollWidth, window.innerWidth]")
        if width > inner:
            culprits = page.evaluate(
                """(limit) => [...document.querySelectorAll('body *')]
                    .filter(e => e.getBoundingClientRect().right > limit + 1)
                    .slice(0, 5).map(e => e.tagName + '.' + e.className + '#' + e.id + ' ' + (e.textContent || '').trim().slice(0, 40))""",
                inner,
            )
            found[name] = (width, culprits)
    return found


@pytest.mark.parametrize(("width", "height"), [(390, 844), (1280, 900)])
def test_no_page_of_the_review_flow_scrolls_sideways(browser, live_server, owner, flow, width, height):
    context, page = _signed_in(browser, live_server, owner, width, height)
    try:
        assert _too_wide(page, live_server, flow) == {}
        page.goto(f"{live_server.url}{flow['focus view']}")
        assert page.locator("[data-rejected-lookalikes] [data-lookalike]").count() == 1
        page.goto(f"{live_server.url}{flow['team']}")
        assert LONG_TEAM_NAME in page.locator("h1").first.inner_text()  # the long name is on the page
    finally:
        context.close()


def test_on_a_phone_the_nav_is_a_menu_and_the_first_queue_item_shows(browser, live_server, owner, flow):
    context, page = _signed_in(browser, live_server, owner, 390, 844)
    try:
        page.goto(f"{live_server.url}{flow['review queue']}")
        assert not page.locator(".banknav .navlinks a").first.is_visible()
        menu = page.locator(".navmenu > summary")
        assert menu.is_visible()
        menu.click()
        assert page.locator(".navmenu-links a", has_text="Judge").is_visible()
        menu.click()
        first = page.locator("#queue tr[data-row]").first
        top = first.evaluate("(row) => row.getBoundingClientRect().top")
        assert 0 <= top < 844 - 40, f"the first queue item starts at {top}px, below the fold"
    finally:
        context.close()


def test_on_a_phone_the_focus_view_shows_the_steps_before_the_comments(browser, live_server, owner, flow):
    context, page = _signed_in(browser, live_server, owner, 390, 844)
    try:
        page.goto(f"{live_server.url}{flow['focus view']}")
        page.locator("#evidence article.step").first.wait_for()
        page.locator("#comments h2").wait_for()
        steps = page.locator("#evidence article.step").first.evaluate("(e) => e.getBoundingClientRect().top")
        comments = page.locator("#comments").evaluate("(e) => e.getBoundingClientRect().top")
        assert steps < comments
    finally:
        context.close()


def test_at_1280_px_the_bank_nav_fits_on_one_line(browser, live_server, owner, flow):
    context, page = _signed_in(browser, live_server, owner, 1280, 900)
    try:
        page.goto(f"{live_server.url}{flow['review queue']}")
        tops = page.locator(".banknav .navlinks a").evaluate_all(
            "(links) => links.map((a) => Math.round(a.getBoundingClientRect().top))"
        )
        assert len(tops) >= 11 and len(set(tops)) == 1, tops  # every bank page's link, one line
        assert not page.locator(".navmenu").is_visible()
    finally:
        context.close()
