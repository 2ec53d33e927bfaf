"""A 600-step trajectory and a MaTTS group in a real Chromium: the jumps
scroll to the final answer and open the page of an error, the errors filter
shows only error steps, the verdict stays in view at the bottom of the page,
and the group page fits a 390 px phone."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from tests.factories import make_done_trajectory, propose_item
from tests.long_trajectory import FINAL_ANSWER, contrast_items, error_indexes, long_steps, make_group

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_long_trajectory_jumps_filter_and_keeps_the_verdict_in_view(page, live_server, login, bank, owner):
    t = make_done_trajectory(bank, steps=long_steps(600), final_answer=FINAL_ANSWER)
    propose_item(bank, t, steps=(5, 300))
    url = f"/banks/{bank.public_id}/trajectories/{t.public_id}/"
    login(page, live_server, owner, url)
    answer = page.locator("#final-answer pre.answer")
    verdict = page.locator("#derived .badge.success.big")
    height = page.evaluate("document.documentElement.scrollHeight")
    assert height < 15_000, height  # one page of 50 steps (54,591 px with all 600)

    # At the bottom of the page the verdict is still in view; the answer is not.
    page.evaluate("window.scrollTo(0, document.documentElement.scrollHeight)")
    expect(verdict).to_be_in_viewport()
    expect(answer).not_to_be_in_viewport()
    page.locator("[data-jump=final]").click()
    expect(answer).to_be_in_viewport()
    expect(answer).to_have_text(FINAL_ANSWER)

    # A jump to an error on another page swaps that page in and scrolls to the step.
    page.locator("[data-jump=error]", has_text="#81").click()
    expect(page.locator("#step-81")).to_be_in_viewport()
    expect(page.locator("#step-81")).to_have_class(re.compile(r"\bis-error\b"))
    expect(page).to_have_url(re.compile(r"\?page=2#step-81$"))

    # The derived item's citation of step 300 opens page 7 in place.
    page.locator("#derived [data-cite]", has_text="#300").click()
    expect(page.locator("#step-300")).to_be_in_viewport()
    expect(page.locator("#step-300")).to_have_class(re.compile(r"\bcited\b"))
    expect(page).to_have_url(re.compile(r"\?step=300#step-300$"))

    # Filter to errors: only error steps are shown.
    page.locator(".stepfilters [data-kind=errors]").click()
    expect(page).to_have_url(re.compile(r"\?kind=errors$"))
    steps = page.locator("#trajectory-steps article.step")
    expect(steps).to_have_count(len(error_indexes(long_steps(600))))
    expect(page.locator("#trajectory-steps article.step:not(.is-error)")).to_have_count(0)
    expect(page.locator(".stepfilters [data-kind=errors]")).to_have_attribute("aria-current", "true")

    # Back to every step: a long step is collapsed and opens with its toggle.
    page.locator(".stepfilters [data-kind='']").click()
    expect(steps).to_have_count(50)
    long_step = page.locator("#step-21 details")
    expect(long_step.locator("pre")).to_be_hidden()
    long_step.locator("summary").click()
    expect(long_step.locator("pre")).to_be_visible()
    page.evaluate("window.scrollTo(0, document.documentElement.scrollHeight)")
    expect(verdict).to_be_in_viewport()


def test_group_page_fits_a_phone_and_shows_each_rollout(page, live_server, login, bank, owner):
    members = make_group(bank, 3)
    items = contrast_items(bank, members)
    page.set_viewport_size({"width": 390, "height": 844})
    login(page, live_server, owner, f"/banks/{bank.public_id}/trajectories/")
    page.locator(f"a[href$='/trajectories/{members[0].public_id}/group/']").click()
    rollouts = page.locator("[data-rollout]")
    expect(rollouts).to_have_count(3)
    expect(page.locator("[data-rollout] [data-verdict]")).to_have_text(["success", "failure", "failure"])
    expect(page.locator("#contrast-items a.itemtitle")).to_have_text([i.title for i in items])
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    # The columns stack: each rollout starts at the same x, below the one before.
    boxes = [rollouts.nth(n).bounding_box() for n in range(3)]
    assert len({round(b["x"]) for b in boxes}) == 1
    assert boxes[0]["y"] < boxes[1]["y"] < boxes[2]["y"]
    # At desktop width they stand side by side.
    page.set_viewport_size({"width": 1280, "height": 900})
    expect(rollouts.nth(1)).to_be_visible()
    boxes = [rollouts.nth(n).bounding_box() for n in range(3)]
    assert len({round(b["y"]) for b in boxes}) == 1
