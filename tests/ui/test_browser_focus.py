"""The review focus view in a real headless Chromium, by keyboard: the
evidence beside the item (verdict and its source, the judge's rationale, the
outcome the agent claimed, the final answer, cited steps), ``y`` agreeing
with the judge (a human label, no reason), ``n`` relabelling with the reason
left empty, and ``s`` skipping to the next item. Each ends on what the
database holds."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from accounts.models import Role
from tests import factories
from trajectories.models import Judgment, JudgmentSource

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def reviewer_user(team):
    return factories.make_member(team, Role.REVIEWER)


def _judged(bank, *, outcome="failure", verdict="success", title="Prefer the official source"):
    trajectory = factories.make_done_trajectory(bank, outcome=outcome, verdict="")
    factories.record_verdict(trajectory, verdict, rationale="Status: success. The answer matches the site.")
    trajectory.refresh_from_db()
    return trajectory, factories.propose_item(bank, trajectory, title=title, steps=(3,))


def _focus_url(bank, item):
    return f"/banks/{bank.public_id}/review/{item.public_id}/"


def test_focus_view_shows_the_evidence_and_y_agrees(page, live_server, login, bank, reviewer_user):
    trajectory, item = _judged(bank)
    login(page, live_server, reviewer_user, _focus_url(bank, item))
    evidence = page.locator("#evidence")
    expect(evidence.locator("[data-verdict-source]")).to_have_text("llm")
    expect(evidence.locator("[data-claimed]")).to_contain_text("failure")
    expect(evidence.locator("[data-rationale]")).to_contain_text("The answer matches the site.")
    expect(evidence.locator("[data-disagreement]")).to_be_visible()
    expect(evidence.locator("#final-answer")).to_contain_text("Sundays 12:00-17:00.")
    expect(evidence.locator("article.step.cited#step-3")).to_have_count(1)
    page.keyboard.press("y")
    expect(page.locator("[data-evidence-note]")).to_contain_text("you agree with the verdict")
    expect(page.locator("[data-verdict-source]")).to_have_text("human")
    human = Judgment.objects.get(trajectory=trajectory, source=JudgmentSource.HUMAN)
    assert (human.label, human.rationale, human.author_id) == ("success", "", reviewer_user.pk)


def test_n_relabels_with_no_reason(page, live_server, login, bank, reviewer_user):
    trajectory, item = _judged(bank)
    login(page, live_server, reviewer_user, _focus_url(bank, item))
    page.locator("#evidence [data-verdict-source]").wait_for()
    page.keyboard.press("n")
    radio = page.locator("#evidence form[data-relabel] input[value=failure]")
    expect(radio).to_be_focused()
    page.keyboard.press("Space")
    page.keyboard.press("Enter")
    expect(page.locator("[data-evidence-note]")).to_contain_text("Relabelled from success to failure")
    trajectory.refresh_from_db()
    assert trajectory.verdict == "failure"
    assert Judgment.objects.get(trajectory=trajectory, source=JudgmentSource.HUMAN).rationale == ""


def test_s_skips_to_the_next_item_leaving_this_one_proposed(page, live_server, login, bank, reviewer_user):
    _first_trajectory, first = _judged(bank, title="Prefer the official source")
    second = factories.propose_item(bank, title="Check the holiday schedule", content="Holidays change the hours.")
    login(page, live_server, reviewer_user, _focus_url(bank, first))
    page.locator("[data-item]").wait_for()
    page.keyboard.press("s")
    page.wait_for_url(re.compile(re.escape(_focus_url(bank, second))))
    first.refresh_from_db()
    assert first.status == "proposed"
