"""The dashboard page through Django's test client: its empty state, its
counts and judge agreement, and the refresh of its live region."""

from __future__ import annotations

import re

from django.urls import reverse

from accounts.tokens.services import api_token_create
from memories.items.versions import item_version_record
from tests.factories import make_done_trajectory, propose_item
from trajectories.models import Judgment

HTMX = {"HTTP_HX_REQUEST": "true"}


def test_dashboard_empty_state_and_llm_notice(client, owner, bank, settings):
    settings.RB_LLM_BASE_URL = ""
    client.force_login(owner)
    html = client.get(reverse("trajectories:dashboard", kwargs={"bank_id": bank.public_id})).content.decode()
    assert "curl -X POST http://testserver/api/v1/trajectories" in html
    assert reverse("accounts:bank_tokens", kwargs={"bank_id": bank.public_id}) in html
    assert "awaiting_llm" in html


def test_dashboard_counts_and_agreement(client, owner, bank):
    agree, disagree = make_done_trajectory(bank), make_done_trajectory(bank, status="awaiting_llm")
    make_done_trajectory(bank, status="needs_attention")
    for t, human in ((agree, "success"), (disagree, "failure")):
        Judgment.objects.create(trajectory=t, source="llm", label="success", prompt_version="v1")
        Judgment.objects.create(trajectory=t, source="human", label=human, author=owner)
    propose_item(bank, agree)
    client.force_login(owner)
    url = reverse("trajectories:dashboard", kwargs={"bank_id": bank.public_id})
    html = client.get(url).content.decode()
    # Two cases are too few for a rate: the counts and how many more it needs (never "0%" from one case).
    stat = " ".join(
        re.sub(
            r"<[^>]+>", " ", html.split("<h2>Judge vs. human</h2>")[1].split('<p class="stat">')[1].split("</p>")[0]
        ).split()
    )
    assert stat == "1 of 2 (a rate needs 5 cases, 3 more)" and "agree on 1 of 2 trajectories" in html
    assert "curl -X POST" not in html
    live = client.get(url, HTTP_HX_TARGET="live", **HTMX).content.decode()
    assert live.lstrip().startswith('<div id="live"') and 'hx-trigger="every 5s"' in live


def test_recent_activity_reads_as_sentences_and_names_who_acted(client, owner, bank):
    stale, kept, retiring = (propose_item(bank, title=t) for t in ("Stale one", "Kept one", "Retiring one"))
    token = api_token_create(bank=bank, name="review bot", scopes=["review"], created_by=owner).token
    item_version_record(item=stale, action="stale", note="the site changed")
    item_version_record(item=kept, action="kept-both", author=owner)
    item_version_record(item=retiring, action="proposed-for-retirement", token=token)
    client.force_login(owner)
    html = client.get(reverse("trajectories:dashboard", kwargs={"bank_id": bank.public_id})).content.decode()
    activity = html[html.index('<ul class="activity">') :]
    lines = [" ".join(re.sub(r"<[^>]+>", " ", li).split()) for li in re.findall(r"<li>(.*?)</li>", activity, re.S)]
    assert "just now the pipeline marked stale: Stale one" in lines, lines
    assert f"just now {owner.get_username()} kept apart from its near-duplicates: Kept one" in lines, lines
    assert f"just now token {token.prefix}… (review bot) proposed for retirement: Retiring one" in lines, lines
