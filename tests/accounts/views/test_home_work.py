"""The home page says, per bank, what waits for the signed-in user (items to
review, for them alone when places are dealt or claimed; disagreements;
trajectories to judge or needing attention) and links the next step, in a
number of queries that does not grow with the number of banks."""

from __future__ import annotations

import re

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from accounts.models import Role
from memories.review.policy import review_policy_update
from memories.review.policy_models import Distribution
from memories.review.seats import review_claim
from tests import factories
from tests.factories import make_trajectory, propose_item

pytestmark = pytest.mark.django_db


def _bank_block(html: str, slug: str) -> str:
    match = re.search(
        rf'<li data-bank="{slug}">(.*?)</li>\s*(?:<li data-bank=|</ul>\s*</section>|</ul>\s*$)', html, re.S
    )
    assert match, f"no bank {slug} on the home page"
    return " ".join(re.sub(r"<[^>]+>", " ", match.group(1)).split())


def test_each_bank_says_what_waits_and_links_the_next_step(client, owner, bank):
    for title in ("Sort by price first", "Confirm from the page"):
        propose_item(bank, title=title)
    make_trajectory(bank, status="awaiting_llm")
    make_trajectory(bank, status="done", verdict="failure", outcome="success")  # the agent and the judge disagree
    make_trajectory(bank, status="needs_attention")
    quiet = factories.make_bank(team=bank.team, slug="quiet")
    client.force_login(owner)
    html = client.get(reverse("accounts:home")).content.decode()

    text = _bank_block(html, bank.slug)
    assert "2 items waiting for review" in text
    assert "1 trajectory where the agent and the judge disagree" in text
    assert "1 trajectory to judge (no LLM has judged them)" in text
    assert "1 trajectory needing attention" in text
    # The next step is the disagreements (the trajectory list's filter, as the dashboard links them), then the rest.
    b = bank.public_id
    assert f'data-next-step href="/banks/{b}/trajectories/?disagree=on">Review them first' in html
    assert f'href="/banks/{b}/trajectories/?status=awaiting_llm"' in html
    assert "Nothing waits for you here." in _bank_block(html, quiet.slug)


def test_with_places_dealt_a_reviewer_counts_only_the_items_theirs_to_decide(client, owner, bank, alice, bob):
    mine, theirs, _free = (propose_item(bank, title=t) for t in ("Mine", "Theirs", "Nobody's"))
    review_policy_update(bank=bank, actor=owner, guidelines="", decisions_required=2, distribution=Distribution.CLAIM)
    review_claim(item=mine, user=alice)
    review_claim(item=theirs, user=bob)

    client.force_login(alice)
    text = _bank_block(client.get(reverse("accounts:home")).content.decode(), bank.slug)
    assert "1 item waiting for your review" in text
    client.force_login(owner)  # owners and admins decide outright: every proposed item waits for them
    text = _bank_block(client.get(reverse("accounts:home")).content.decode(), bank.slug)
    assert "3 items waiting for review" in text


def test_the_home_pages_queries_do_not_grow_with_the_number_of_banks(client, owner, bank, alice):
    def queries() -> int:
        with CaptureQueriesContext(connection) as captured:
            assert client.get(reverse("accounts:home")).status_code == 200
        return len(captured)

    def fill(b) -> None:
        propose_item(b, title=f"Lesson of {b.slug}")
        make_trajectory(b, status="awaiting_llm")

    fill(bank)
    review_policy_update(bank=bank, actor=owner, guidelines="", decisions_required=2, distribution=Distribution.CLAIM)
    client.force_login(alice)
    few = queries()
    for i in range(4):
        other_team = factories.make_team(owner=owner, slug=f"more-{i}")
        factories.make_member(other_team, Role.REVIEWER, user=alice)
        for j in range(2):
            extra = factories.make_bank(team=other_team if j else bank.team, slug=f"b{i}-{j}")
            fill(extra)
            if j:
                review_policy_update(
                    bank=extra, actor=owner, guidelines="", decisions_required=2, distribution=Distribution.CLAIM
                )
    assert queries() == few


def test_a_viewer_is_not_sent_to_review_or_judge(client, bank, viewer):
    propose_item(bank, title="Sort by price first")
    make_trajectory(bank, status="awaiting_llm")
    client.force_login(viewer)
    html = client.get(reverse("accounts:home")).content.decode()
    assert "data-next-step" not in html
    assert "Nothing waits for you here." in _bank_block(html, bank.slug)
