"""Small wording and display details: the role-change message names the new role,
"just now" instead of "0 minutes ago", counts with their noun in the right
number (never "item(s)"), and one origin badge on the item page when it
already names the verdict."""

from __future__ import annotations

import io
import re
import tokenize
from datetime import timedelta
from pathlib import Path

import pytest
from django.urls import reverse
from django.utils import timezone

from accounts.models import Membership, Role
from accounts.templatetags.rb import ago
from memories.items.models import MemoryItem
from reasoningbank_site.text import counted
from tests import factories
from tests.factories import propose_item

pytestmark = pytest.mark.django_db

ROOT = Path(__file__).resolve().parents[2]


def test_changing_a_reviewer_to_viewer_says_viewer(client, owner, team):
    reviewer = factories.make_member(team, Role.REVIEWER)
    membership = Membership.objects.get(team=team, user=reviewer)
    client.force_login(owner)
    page = client.post(
        reverse("accounts:member_change_role", kwargs={"team_id": team.public_id}),
        {"membership": membership.pk, "role": Role.VIEWER},
        follow=True,
    ).content.decode()
    assert f"{reviewer.username} is now viewer." in page
    assert "is now reviewer" not in page
    assert Membership.objects.get(pk=membership.pk).role == Role.VIEWER


def test_just_now_instead_of_zero_minutes_ago(client, owner, bank, trajectory):
    item = propose_item(bank, trajectory)
    assert ago(timezone.now()) == "just now"
    assert ago(timezone.now() + timedelta(seconds=5)) == "just now"  # a clock slightly ahead
    assert ago(timezone.now() - timedelta(minutes=3, seconds=5)) == "3\xa0minutes ago"
    client.force_login(owner)
    for url in (
        reverse("memories:review", kwargs={"bank_id": bank.public_id}),
        reverse("trajectories:list", kwargs={"bank_id": bank.public_id}),
        reverse("trajectories:dashboard", kwargs={"bank_id": bank.public_id}),
    ):
        html = client.get(url).content.decode()
        assert "just now" in html, url
        assert not re.search(r"0\s*(&nbsp;|\xa0)?minutes ago", html), url
    MemoryItem.objects.filter(pk=item.pk).update(created_at=timezone.now() - timedelta(hours=2))
    html = client.get(reverse("memories:review", kwargs={"bank_id": bank.public_id})).content.decode()
    assert re.search(r"2\s*(&nbsp;|\xa0)hours ago", html)


def test_counts_take_the_right_noun():
    assert counted(1, "item") == "1 item"
    assert counted(0, "item") == "0 items"
    assert counted(2, "trajectory", "trajectories") == "2 trajectories"


def _texts(path: Path):
    """(line, text) of what a file says to people: its string literals for Python, every line otherwise."""
    source = path.read_text(encoding="utf-8")
    if path.suffix != ".py":
        yield from enumerate(source.splitlines(), 1)
        return
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.STRING:
            yield token.start[0], token.string


def test_no_noun_with_a_parenthesised_plural_in_templates_or_messages():
    """ "item(s)", "trajectory(ies)": none left in what users or operators read."""
    found = []
    for folder in ("templates", "accounts", "memories", "trajectories", "reasoningbank_site", "static/js"):
        for path in (ROOT / folder).rglob("*"):
            if path.suffix in (".py", ".html", ".txt", ".js") and "migrations" not in path.parts:
                for n, text in _texts(path):
                    if re.search(r"[a-z]\((s|ies|es)\)", text):
                        found.append(f"{path.relative_to(ROOT)}:{n}: {text.strip()[:120]}")
    assert found == []


def test_item_page_shows_the_origin_once_when_it_names_the_verdict(client, owner, bank, trajectory):
    success = propose_item(bank, trajectory)  # origin success, verdict success
    client.force_login(owner)
    html = client.get(
        reverse("memories:item_detail", kwargs={"bank_id": bank.public_id, "item_id": success.public_id})
    ).content.decode()
    assert html.count("Distilled from a success") == 1
    assert ">from a success</span>" not in html
    assert '<span class="badge success" data-origin>Distilled from a success</span>' in html

    contrast = propose_item(bank, trajectory, title="Contrast", origin="matts-parallel", verdict_label="failure")
    html = client.get(
        reverse("memories:item_detail", kwargs={"bank_id": bank.public_id, "item_id": contrast.public_id})
    ).content.decode()
    # Here the verdict adds something the origin does not say.
    assert "MaTTS parallel (self-contrast)" in html and '<span class="badge failure">from a failure</span>' in html
