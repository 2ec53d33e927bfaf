"""Layout of the review flow in a real headless Chromium, at a phone's 390×844
and a laptop's 1,280 px: no page a reviewer reaches scrolls sideways
(``document.documentElement.scrollWidth <= innerWidth``), even with a
120-character team name, long words in titles and what agents really send:
URLs in the task, the steps and the answer, tool arguments as JSON, long tool
names and ids, an LLM error naming its endpoint; and with the demo data that
``make run`` seeds, judged and distilled by the pipeline."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest
from django.contrib.auth import get_user_model
from django.urls import reverse

from accounts.models import Team
from memories.items.models import ItemStatus, MemoryItem
from memories.releases.models import Release
from memories.releases.publishing import release_publish
from memories.review.decisions import memory_item_approve
from reasoningbank_site.demo import ADMIN_USERNAME, demo_seed
from tests import factories
from tests.factories import make_done_trajectory, propose_item
from tests.ui.conftest import PASSWORD, signed_in
from trajectories.models import Trajectory
from trajectories.pipeline.llm_usage import llm_usage_record
from trajectories.records.comments import comment_add

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

LONG_TEAM_NAME = ("Research and development of the checkout-flow evaluation agents " * 2)[:120]
LONG_WORD = "Supercalifragilistic-expialidocious-configuration-value"
# What web agents send: a URL with no break opportunity wider than a phone, in the task, steps and answer.
URL = (
    "https://shop.example.com/checkout/confirmation?order_id=9f8e7d6c5b4a39281706f5e4d3c2b1a0"
    "&session=eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0"
)
TOOL = "browser_navigate_to_url_and_extract_structured_content"
AGENT_OUTPUT = [
    {"index": 0, "kind": "user", "content": "Confirm the order at " + URL},
    {
        "index": 1,
        "kind": "tool_call",
        "content": "",
        "name": TOOL,
        "arguments": json.dumps({"url": URL, "wait_for_selector": "div.order-confirmation-panel"}, indent=2),
        "call_id": "call_9f8e7d6c5b4a39281706f5e4d3c2b1a0",
    },
    {
        "index": 2,
        "kind": "tool_result",
        "content": '<div class="order-confirmation-panel" data-order="9f8e7d6c5b4a39281706f5e4d3c2b1a0">'
        + URL
        + "</div>",
        "name": TOOL,
    },
    {"index": 3, "kind": "answer", "content": "Confirmed: " + URL},
]


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
    output = make_done_trajectory(
        bank,
        task="Confirm the order at " + URL,
        steps=AGENT_OUTPUT,
        final_answer="Confirmed: " + URL,
        external_id="run-9f8e7d6c5b4a39281706f5e4d3c2b1a0-checkout-confirmation",
        group_id="group-9f8e7d6c5b4a39281706f5e4d3c2b1a0",
    )
    factories.record_verdict(
        output, "success", rationale="The page " + URL + " shows the order.", model="accounts/models/" + TOOL
    )
    llm_usage_record(  # the trajectory's and the dashboard's LLM token tables
        bank_id=bank.pk,
        stage="judge",
        model="accounts/models/" + TOOL,
        usage=SimpleNamespace(prompt_tokens=1200, completion_tokens=80),
        trajectory_ids=[output.pk],
    )
    cited = propose_item(bank, output, title="Read the confirmation page before reporting " + URL, steps=(1, 2))
    comment_add(bank=bank, author=owner, body="Compare with " + URL, item=cited)
    comment_add(bank=bank, author=owner, body="Compare with " + URL, trajectory=output)
    parked = make_done_trajectory(bank, task="Parked on an LLM error " + LONG_WORD)
    Trajectory.objects.filter(pk=parked.pk).update(
        status="awaiting_llm",
        status_detail=f"The LLM endpoint {URL} answered 503; retrying at 07:40.",
        retry_at=parked.created_at,
        enqueued_at=None,
    )
    served = propose_item(bank, output, title="Quote the order number from the page " + URL, steps=(2,))
    memory_item_approve(item=served, author=owner)
    release_publish(bank=bank, actor=owner, note="Checked against " + URL)
    release = Release.objects.filter(bank=bank).latest("number")
    b = {"bank_id": bank.public_id}
    t = {**b, "trajectory_id": output.public_id}
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
        "trajectories": reverse("trajectories:list", kwargs=b),
        "agent output": reverse("trajectories:detail", kwargs=t),
        "parked": reverse("trajectories:detail", kwargs={**b, "trajectory_id": parked.public_id}),
        "evidence": reverse("trajectories:evidence", kwargs=t),
        "group": reverse("trajectories:group", kwargs=t),
        "trajectory comments": reverse("trajectories:trajectory_comments", kwargs=t),
        "item comments": reverse("trajectories:item_comments", kwargs={**b, "item_id": cited.public_id}),
        "cited item": reverse("memories:item_detail", kwargs={**b, "item_id": cited.public_id}),
        "items": reverse("memories:items", kwargs=b),
        "releases": reverse("trajectories:releases", kwargs=b),
        "release": reverse("trajectories:release_detail", kwargs={**b, "release_id": release.public_id}),
        "impact": reverse("trajectories:impact", kwargs=b),
        "exports": reverse("trajectories:export", kwargs=b),
        "audit": reverse("accounts:bank_audit", kwargs=b),
        "team audit": reverse("accounts:team_audit", kwargs={"team_id": bank.team.public_id}),
        "settings": reverse("accounts:bank_settings", kwargs=b),
        "learning settings": reverse("memories:bank_learning", kwargs=b),
        "trust settings": reverse("memories:trust", kwargs=b),
        "review policy": reverse("memories:review_policy", kwargs=b),
        "tokens": reverse("accounts:bank_tokens", kwargs=b),
        "webhooks": reverse("accounts:bank_webhooks", kwargs=b),
        "playground": reverse("memories:playground", kwargs=b),
    }


def _too_wide(page, live_server, pages: dict[str, str]) -> dict:
    found = {}
    for name, url in pages.items():
        page.goto(f"{live_server.url}{url}")
        page.wait_for_load_state("networkidle")  # the focus view's evidence and comments load after the page
        width, inner = page.evaluate("[document.documentElement.scrollWidth, window.innerWidth]")
        if width > inner:
            # Name the innermost elements that stick out and are not clipped by a box of their own, so a
            # failure says what to fix.
            culprits = page.evaluate(
                """(limit) => {
                    const out = (e) => e.getBoundingClientRect().right > limit + 1;
                    const clipped = (e) => {
                        for (let a = e.parentElement; a && a !== document.body; a = a.parentElement) {
                            if (getComputedStyle(a).overflowX !== 'visible') return true;
                        }
                        return false;
                    };
                    return [...document.querySelectorAll('body *')]
                        .filter((e) => out(e) && !clipped(e) && ![...e.children].some(out))
                        .slice(0, 5)
                        .map((e) => `${e.tagName}.${e.className}#${e.id} ${(e.textContent || '').trim().slice(0, 40)}`);
                }""",
                inner,
            )
            found[name] = (width, culprits)
    return found


@pytest.mark.parametrize(("width", "height"), [(390, 844), (1280, 900)])
def test_no_page_of_the_review_flow_scrolls_sideways(browser, live_server, owner, flow, width, height):
    context, page = signed_in(browser, live_server, owner, width, height)
    try:
        too_wide = _too_wide(page, live_server, flow)
        assert not too_wide, too_wide
        page.goto(f"{live_server.url}{flow['focus view']}")
        assert page.locator("[data-rejected-lookalikes] [data-lookalike]").count() == 1
        page.goto(f"{live_server.url}{flow['team']}")
        assert LONG_TEAM_NAME in page.locator("h1").first.inner_text()  # the long name is on the page
    finally:
        context.close()


def test_on_a_phone_the_nav_is_a_menu_and_the_first_queue_item_shows(browser, live_server, owner, flow):
    context, page = signed_in(browser, live_server, owner, 390, 844)
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
    context, page = signed_in(browser, live_server, owner, 390, 844)
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
    context, page = signed_in(browser, live_server, owner, 1280, 900)
    try:
        page.goto(f"{live_server.url}{flow['review queue']}")
        tops = page.locator(".banknav .navlinks a").evaluate_all(
            "(links) => links.map((a) => Math.round(a.getBoundingClientRect().top))"
        )
        assert len(tops) >= 11 and len(set(tops)) == 1, tops  # every bank page's link, one line
        assert not page.locator(".navmenu").is_visible()
    finally:
        context.close()


JUDGED_SUCCESS = '{"verdict": "success", "rationale": "The agent did what the task asked."}'
DISTILLED = """The agent confirmed its result on the page.

# Memory Item 1
## Title
Read the confirmation before reporting
## Description
Use after any action that changes an order or an account.
## Content
Read the page for a confirmation or an error before reporting the task as done.
"""


@pytest.mark.parametrize(("width", "height"), [(390, 844), (1280, 900)])
def test_the_demo_data_judged_and_distilled_fits_every_page(
    browser, live_server, tmp_path, fake_llm, eager_celery, width, height
):
    # What `make run` seeds (rb_demo), then judged and distilled by the pipeline against an LLM endpoint.
    fake_llm.responder = lambda messages: (
        JUDGED_SUCCESS if "accomplished the task" in messages[-1]["content"] else DISTILLED
    )
    bank = demo_seed(token_path=tmp_path / "demo-token.txt").bank
    runs = list(Trajectory.objects.filter(bank=bank))
    for trajectory in runs:
        factories.process_trajectory(trajectory)
    assert {t.status for t in Trajectory.objects.filter(bank=bank)} == {"done"}
    admin = get_user_model().objects.get(username=ADMIN_USERNAME)
    admin.set_password(PASSWORD)
    admin.save(update_fields=["password"])
    b = {"bank_id": bank.public_id}
    pages = {"home": reverse("accounts:home"), "dashboard": reverse("trajectories:dashboard", kwargs=b)}
    for t in runs:
        ids = {**b, "trajectory_id": t.public_id}
        pages[t.external_id] = reverse("trajectories:detail", kwargs=ids)
        pages[f"{t.external_id} evidence"] = reverse("trajectories:evidence", kwargs=ids)
    proposed = MemoryItem.objects.filter(bank=bank, status=ItemStatus.PROPOSED).first()
    pages["focus view"] = reverse("memories:review_focus", kwargs={**b, "item_id": proposed.public_id})
    pages["trajectories"] = reverse("trajectories:list", kwargs=b)
    context, page = signed_in(browser, live_server, admin, width, height)
    try:
        too_wide = _too_wide(page, live_server, pages)
        assert not too_wide, too_wide
        page.goto(f"{live_server.url}{pages['demo-quote-form']}")
        assert page.locator("#llm-tokens table").count() == 1  # the pipeline's token table is on the page
    finally:
        context.close()


@pytest.mark.parametrize("team_name", ["Demo team", LONG_TEAM_NAME])
@pytest.mark.parametrize(("width", "height", "keeps"), [(1366, 768, 180), (390, 844, 120)])
def test_the_top_bar_shows_the_banks_name_before_the_teams(
    browser, live_server, owner, bank, team_name, width, height, keeps
):
    bank_name = "Web shopping agent (production)"
    Team.objects.filter(pk=bank.team_id).update(name=team_name)
    bank.name = bank_name
    bank.save(update_fields=["name"])
    context, page = signed_in(browser, live_server, owner, width, height)
    try:
        page.goto(f"{live_server.url}{reverse('trajectories:dashboard', kwargs={'bank_id': bank.public_id})}")
        assert page.locator(".banknav .bankname strong").inner_text() == bank_name
        assert page.locator(".banknav .bankname").get_attribute("title") == f"{team_name} / {bank_name}"
        # How much of each name is visible: its text's width inside every box that clips it.
        seen = page.evaluate(
            """() => [...document.querySelectorAll('.bankname > *')].map((e) => {
                const range = document.createRange();
                range.selectNodeContents(e);
                const text = range.getBoundingClientRect();
                let right = window.innerWidth;
                for (let a = e; a && a !== document.body; a = a.parentElement) {
                    if (getComputedStyle(a).overflowX !== 'visible') right = Math.min(right, a.getBoundingClientRect().right);
                }
                return {full: Math.round(text.width), visible: Math.round(Math.min(text.right, right) - text.left)};
            })"""
        )
        team, name = seen
        # The bank's name keeps at least 12rem on a laptop, 8rem on a phone ("Web shopping agent (pr…", not
        # "Web …"); the team's gives way first.
        assert name["visible"] >= min(name["full"], keeps), seen
        assert team["visible"] < team["full"] or name["visible"] == name["full"], seen
        if width > 1000:
            tops = page.locator(".banknav .navlinks a").evaluate_all(
                "(links) => links.map((a) => Math.round(a.getBoundingClientRect().top))"
            )
            assert len(set(tops)) == 1, tops  # and the bank's links still fit on one line
        assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
    finally:
        context.close()
