"""The pages are usable on a phone. In a real Chromium at 390×844
(an iPhone 12–15's viewport), every main page of a bank full of long text —
long titles, long usernames and e-mails, audit diffs, tokens, charts — fits
the screen: the page itself never scrolls sideways (wide tables scroll inside
their own box or stack as cards)."""

from __future__ import annotations

import pytest
from django.urls import reverse

from accounts.models import Role
from accounts.tokens.services import api_token_create
from memories.items.services import memory_item_edit
from memories.review.decisions import memory_item_approve, memory_item_reject
from tests import factories
from tests.factories import bulk_items, make_done_trajectory, propose_item
from tests.ui.conftest import PASSWORD

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

WIDTH, HEIGHT = 390, 844
LONG_WORD = "Supercalifragilistic-expialidocious-configuration-value"


@pytest.fixture
def scene(bank, owner):
    team = bank.team
    for i in range(3):
        user = factories.make_user(f"reviewer-with-a-rather-long-username-{i}")
        user.email = f"reviewer.with.a.rather.long.address.{i}@subdomain.example-company.com"
        user.save(update_fields=["email"])
        factories.make_member(team, Role.REVIEWER, user=user)
    for name in ("production agent on the checkout flow", "nightly evaluation runner"):
        api_token_create(bank=bank, name=name, scopes=["retrieve", "ingest"], created_by=owner)
    trajectory = make_done_trajectory(
        bank,
        task="Find the cheapest flight from Lisbon to Helsinki next Tuesday with one checked bag " + LONG_WORD * 2,
        agent="a-very-long-agent-name-for-the-travel-booking-pipeline",
    )
    item = propose_item(
        bank,
        trajectory,
        title="Compare the fare calendar with the cart total before paying " + LONG_WORD,
        content="Open the fare calendar, note the cheapest day, then check the cart total. " * 6,
    )
    memory_item_edit(item=item, author=owner, content="Open the fare calendar first; " + item.content)
    memory_item_approve(item=item, author=owner)
    rejected = propose_item(bank, trajectory, title="Always pick the first result " + LONG_WORD)
    memory_item_reject(item=rejected, author=owner, reason="Too specific to one site " + LONG_WORD)
    for extra in bulk_items(bank, 6):
        extra.title = f"{extra.title}: a long proposed lesson title that wraps " + LONG_WORD
        extra.save(update_fields=["title"])
    return {"item": item, "trajectory": trajectory}


def _pages(bank, scene) -> dict[str, str]:
    b = {"bank_id": bank.public_id}
    return {
        "dashboard": reverse("trajectories:dashboard", kwargs=b),
        "review queue": reverse("memories:review", kwargs=b),
        "item": reverse("memories:item_detail", kwargs={**b, "item_id": scene["item"].public_id}),
        "items": reverse("memories:items", kwargs=b),
        "tokens": reverse("accounts:bank_tokens", kwargs=b),
        "team": reverse("accounts:team", kwargs={"team_id": bank.team.public_id}),
        "audit": reverse("accounts:bank_audit", kwargs=b),
        "team audit": reverse("accounts:team_audit", kwargs={"team_id": bank.team.public_id}),
        "trajectories": reverse("trajectories:list", kwargs=b),
        "impact": reverse("trajectories:impact", kwargs=b),
        "judge": reverse("trajectories:judge", kwargs=b),
        "playground": reverse("memories:playground", kwargs=b),
        "settings": reverse("accounts:bank_settings", kwargs=b),
        "home": reverse("accounts:home"),
        "not found": "/banks/00000000-0000-0000-0000-000000000000/",
    }


def test_main_pages_do_not_scroll_sideways_at_390px(browser, live_server, bank, owner, scene):
    context = browser.new_context(viewport={"width": WIDTH, "height": HEIGHT})
    page = context.new_page()
    page.set_default_timeout(30_000)
    try:
        page.goto(f"{live_server.url}/accounts/login/")
        page.fill("input[name=username]", owner.username)
        page.fill("input[name=password]", PASSWORD)
        page.click("form button[type=submit]")
        page.wait_for_load_state()
        too_wide = {}
        for name, url in _pages(bank, scene).items():
            page.goto(f"{live_server.url}{url}")
            page.wait_for_load_state("load")
            width = page.evaluate("document.documentElement.scrollWidth")
            if width > WIDTH:
                # Name the widest culprits, so a failure says what to fix.
                too_wide[name] = (
                    width,
                    page.evaluate(
                        """(limit) => [...document.querySelectorAll('body *')]
                            .filter(e => e.getBoundingClientRect().right > limit + 1)
                            .slice(0, 5).map(e => e.tagName + '.' + e.className + '#' + e.id)""",
                        WIDTH,
                    ),
                )
        assert too_wide == {}
        # The pages were the real ones, with the scene's content on them.
        page.goto(f"{live_server.url}{_pages(bank, scene)['audit']}")
        assert page.locator("table.audit tbody tr").count() > 3
        assert page.locator("table.audit del").count() > 0  # a readable diff, not raw JSON
        page.goto(f"{live_server.url}{_pages(bank, scene)['dashboard']}")
        assert page.locator("#chart-review svg").is_visible()
        # The favicon the pages link to, and the address browsers guess, both answer with the icon.
        assert page.locator("link[rel=icon]").get_attribute("href") == "/static/favicon.svg"
        icon = page.goto(f"{live_server.url}/favicon.ico")
        assert icon.ok and icon.headers["content-type"].startswith("image/svg+xml")
    finally:
        context.close()
