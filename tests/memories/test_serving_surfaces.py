"""Every surface that shows or ships what a bank serves agrees with /retrieve:
the same bank is read through /retrieve in both modes (each arm of a canary
and the holdout), GET /memories and each item, the MCP list_memories tool,
the Agent Skills folder, the zip, the AGENTS.md section and the served
export, with automatic publishing, manual publishing with approved items not
yet published, candidate releases waiting for an evaluation, a canary, and a rollback after items of the newer release
were archived as wrong, suspended or superseded, and a bank that requires
corroboration before serving."""

from __future__ import annotations

import asyncio
import io
import json
import random
import re
import zipfile

import pytest
import yaml
from django.db import transaction
from markdown_it import MarkdownIt

from accounts.models import MAX_TOP_K, Bank, RetrievalMode
from memories.embedding.items import memory_item_embed_refresh
from memories.items.consolidation import memory_item_support_record
from memories.items.models import MemoryItem
from memories.items.services import memory_item_edit
from memories.learning.refusals import memory_item_archive_as_wrong
from memories.releases.labels import release_rollback
from memories.releases.models import EvaluationGate, PublishMode
from memories.releases.publishing import release_gate_set, release_mode_set, release_publish
from memories.review.decisions import memory_item_approve, memory_item_archive, memory_item_supersede
from memories.trust.models import VerdictTier
from memories.trust.services import bank_trust_policy_update, memory_items_auto_approve
from reasoningbank_client.async_client import AsyncClient
from reasoningbank_client.mcp import build_server
from tests.factories import make_done_trajectory, make_token, propose_item

pytestmark = pytest.mark.django_db(transaction=True)

QUERY = "How should the agent handle a web shop task?"
LESSONS = {
    "a": ("Sign in before looking for account data", "Find the login form first; anonymous pages hide orders."),
    "b": ("Type dates instead of clicking the calendar", "Typing an ISO date into the input is more reliable."),
    "c": ("Read the whole task before the first click", "Constraints often sit at the end of the task text."),
    "d": ("Prefer the shop's own search box", "Site search finds items the category menus hide."),
    "e": ("Check the cart total before paying", "Coupons and shipping change the total at the last step."),
}


@pytest.fixture
def shop(bank, owner):
    """A bank whose every served lesson is served for QUERY (no similarity floor, no duplicate suppression),
    its five proposed lessons learnt from one task (one experience), and a token reading it."""
    bank.min_similarity, bank.duplicate_threshold, bank.top_k = -1.0, 1.0, MAX_TOP_K
    bank.save(update_fields=["min_similarity", "duplicate_threshold", "top_k"])
    trajectory = make_done_trajectory(bank)
    items = {
        key: propose_item(bank, trajectory, title=title, description="Use it in a web shop.", content=content)
        for key, (title, content) in LESSONS.items()
    }
    return items, make_token(bank, scopes=("retrieve",))


def _approve(item, owner):
    approved = memory_item_approve(item=item, author=owner, confirm_duplicate=True)
    memory_item_embed_refresh(item_id=item.pk)  # the worker's embedding, inline
    return approved


def _titles(rows) -> set[str]:
    return {row["title"] for row in rows}


def _retrieve(client, token, bank, mode: str) -> list[dict]:
    """40 retrievals in ``mode`` (seeded by the caller, so every arm is drawn, the same way every time):
    [{"release", "titles"}] per retrieval."""
    Bank.objects.filter(pk=bank.pk).update(retrieval_mode=mode)
    answers = []
    for _ in range(40):
        response = client.post(
            "/api/v1/retrieve",
            {"query": QUERY, "k": MAX_TOP_K},
            content_type="application/json",
            HTTP_AUTHORIZATION=f"Bearer {token}",
        )
        assert response.status_code == 200, response.content
        body = response.json()
        answers.append({"release": body["release"], "titles": _titles(body["items"])})
    return answers


def _lesson_headings(markdown: str, tag: str) -> set[str]:
    tokens = MarkdownIt("commonmark").parse(markdown)
    return {
        "".join(child.content for child in tokens[i + 1].children)
        for i, tok in enumerate(tokens)
        if tok.type == "heading_open" and tok.tag == tag
    }


def _mcp_list(live_server, token) -> dict:
    server = build_server(lambda ctx: AsyncClient(live_server.url, token))
    result = asyncio.run(server.call_tool("list_memories", {"limit": 100}))
    assert not result.is_error
    return result.structured_content


def surfaces(client, live_server, token, bank) -> dict[str, tuple[int | None, set[str]]]:
    """What each listing surface serves: (the release it says it holds, the lesson titles)."""
    auth = {"HTTP_AUTHORIZATION": f"Bearer {token}"}
    seen: dict[str, tuple[int | None, set[str]]] = {}
    listed = client.get("/api/v1/memories?limit=100", **auth).json()
    assert listed["count"] == len(listed["items"])
    seen["GET /memories"] = (listed.get("release"), _titles(listed["items"]))
    one = [client.get(f"/api/v1/memories/{row['id']}", **auth).json() for row in listed["items"]]
    seen["GET /memories/{id}"] = (
        {row.get("release") for row in one}.pop() if one else listed.get("release"),
        _titles(one),
    )
    served_ids = {row["id"] for row in listed["items"]}
    for item in MemoryItem.objects.filter(bank=bank).exclude(public_id__in=served_ids):
        assert client.get(f"/api/v1/memories/{item.public_id}", **auth).status_code == 404
    mcp = _mcp_list(live_server, token)
    seen["MCP list_memories"] = (mcp.get("release"), _titles(mcp["items"]))

    skill = client.get("/api/v1/export/skills?format=skill", **auth)
    front_end = skill.content.decode().index("\n---\n", 4)
    meta = yaml.safe_load(skill.content.decode()[4:front_end])["metadata"]
    seen["SKILL.md"] = (_release(meta.get("release", "none")), _lesson_headings(skill.content.decode(), "h3"))
    assert skill.get("X-Bank-Release", "none") == meta.get("release", "none")
    archive = zipfile.ZipFile(io.BytesIO(client.get("/api/v1/export/skills?format=zip", **auth).content))
    (name,) = archive.namelist()
    zipped = archive.read(name).decode()
    zipped_meta = yaml.safe_load(zipped[4 : zipped.index("\n---\n", 4)])["metadata"]
    seen["skill zip"] = (_release(zipped_meta.get("release", "none")), _lesson_headings(zipped, "h3"))
    agents = client.get("/api/v1/export/skills?format=agents", **auth).content.decode()
    stamp = re.search(rf"`{bank.team.slug}/{bank.slug}`, (release (\d+)|no release yet), version", agents)
    held = (int(stamp.group(2)) if stamp.group(2) else None) if stamp else "not stamped"
    seen["AGENTS.md section"] = (held, _lesson_headings(agents, "h4"))

    exported = client.get("/api/v1/export/memories.reasoning-bank.jsonl", **auth)
    rows = [json.loads(line) for line in b"".join(exported.streaming_content).decode().splitlines()]
    seen["served export"] = (listed.get("release"), _titles(rows))
    return seen


def _release(value: str) -> int | None:
    return None if value == "none" else int(value)


def assert_all_agree(client, live_server, token, bank, *, release, titles, canary=None, holdout=False):
    """Every listing surface holds ``titles`` as release ``release``; /retrieve, in both modes, serves
    exactly that in its production arm (and ``canary``: (number, titles) in its canary arm, nothing in the
    holdout arm when ``holdout``)."""
    expected = (release, titles)
    assert surfaces(client, live_server, token, bank) == {
        name: expected
        for name in (
            "GET /memories",
            "GET /memories/{id}",
            "MCP list_memories",
            "SKILL.md",
            "skill zip",
            "AGENTS.md section",
            "served export",
        )
    }
    arms = {(release, frozenset(titles))}
    if canary is not None:
        arms.add((canary[0], frozenset(canary[1])))
    if holdout:
        arms.add((release, frozenset()))
    for mode in (RetrievalMode.ITEMS, RetrievalMode.EXPERIENCES):
        random.seed(20261129)
        drawn = {(a["release"], frozenset(a["titles"])) for a in _retrieve(client, token, bank, mode)}
        assert drawn == arms, mode


def test_automatic_publishing_serves_the_approved_set_everywhere(client, live_server, bank, owner, shop):
    items, token = shop
    for key in "abcd":
        _approve(items[key], owner)
    memory_item_archive_as_wrong(item=items["d"], author=owner, reason="wrong shop")
    titles = {LESSONS[key][0] for key in "abc"}
    assert_all_agree(client, live_server, token, bank, release=5, titles=titles)


def test_manual_publishing_serves_production_not_the_approved_items_waiting_for_a_release(
    client, live_server, bank, owner, shop
):
    items, token = shop
    release_mode_set(bank=bank, mode=PublishMode.MANUAL, actor=owner)
    for key in "ab":
        _approve(items[key], owner)
    release_publish(bank=bank, actor=owner, note="first two")
    for key in "cd":
        _approve(items[key], owner)  # approved, in the draft, not published
    # An edit of a published item waits for the next release too: production serves its text as released.
    memory_item_edit(item=items["a"], author=owner, title="Log in first, then look for orders")
    memory_item_embed_refresh(item_id=items["a"].pk)
    assert_all_agree(client, live_server, token, bank, release=1, titles={LESSONS[key][0] for key in "ab"})


def test_a_candidate_release_is_served_by_no_surface_until_it_is_made_production(
    client, live_server, bank, owner, shop
):
    items, token = shop
    for key in "ab":
        _approve(items[key], owner)  # releases 1 and 2, production at once
    release_gate_set(bank=bank, gate=EvaluationGate.NOT_WORSE, actor=owner)
    for key in "cd":
        _approve(items[key], owner)
    assert release_publish(bank=bank, actor=owner).candidate  # release 3, under the gate
    release_gate_set(bank=bank, gate=EvaluationGate.OFF, actor=owner)
    _approve(items["e"], owner)
    assert release_publish(bank=bank, actor=owner, candidate=True).candidate  # release 4, asked for
    bank.holdout_fraction = 0.2
    bank.save(update_fields=["holdout_fraction"])
    assert_all_agree(
        client, live_server, token, bank, release=2, titles={LESSONS[key][0] for key in "ab"}, holdout=True
    )


def test_a_canary_and_a_holdout_each_serve_their_arm_and_the_lists_hold_production(
    client, live_server, bank, owner, shop
):
    items, token = shop
    release_mode_set(bank=bank, mode=PublishMode.MANUAL, actor=owner)
    for key in "ab":
        _approve(items[key], owner)
    release_publish(bank=bank, actor=owner)
    _approve(items["c"], owner)
    release_publish(bank=bank, actor=owner, canary_fraction=0.4)
    bank.holdout_fraction = 0.2
    bank.save(update_fields=["holdout_fraction"])
    production = {LESSONS[key][0] for key in "ab"}
    canary = (2, {LESSONS[key][0] for key in "abc"})
    assert_all_agree(client, live_server, token, bank, release=1, titles=production, canary=canary, holdout=True)


def test_a_rollback_never_brings_back_an_item_archived_as_wrong_suspended_or_superseded(
    client, live_server, bank, owner, shop
):
    items, token = shop
    for key in "abcde":
        _approve(items[key], owner)  # releases 1-5, each production at once
    memory_item_archive(item=items["e"], author=owner)  # archived, not as wrong: a rollback serves it again
    memory_item_archive_as_wrong(item=items["b"], author=owner, reason="the login form moved")
    MemoryItem.objects.filter(pk=items["c"].pk).update(suspended=True)  # as Impact suspends a hurting item
    memory_item_supersede(item=items["d"], reason="replaced by a newer judgment")
    release_rollback(bank=bank, number=5, actor=owner)
    titles = {LESSONS[key][0] for key in "ae"}
    assert_all_agree(client, live_server, token, bank, release=5, titles=titles)


def test_a_bank_requiring_corroboration_serves_only_human_approved_or_corroborated_items_everywhere(
    client, live_server, bank, owner, shop
):
    """Release 1 holds two items a human approved and two the trust policy approved, each learnt from one run;
    the bank then requires two independent runs: one of the policy's items is distilled again by another run
    (seen again), the other is not. Every surface serves the human's two and the corroborated one."""
    items, token = shop
    release_mode_set(bank=bank, mode=PublishMode.MANUAL, actor=owner)
    for key in "ab":
        _approve(items[key], owner)
    bank_trust_policy_update(bank=bank, actor=owner, auto_approve=True, audit_share=0.0)
    with transaction.atomic():  # as in the pipeline's distillation
        assert len(memory_items_auto_approve(items=[items["c"], items["d"]], tier=VerdictTier.JUDGE)) == 2
    for key in "cd":
        memory_item_embed_refresh(item_id=items[key].pk)
    release_publish(bank=bank, actor=owner, note="two by a human, two by the policy")
    assert_all_agree(client, live_server, token, bank, release=1, titles={LESSONS[key][0] for key in "abcd"})

    bank_trust_policy_update(bank=bank, actor=owner, corroboration_required=True, corroboration_min_sources=2)
    again = make_done_trajectory(bank, external_id="another-run")
    proposal = MemoryItem(
        bank=bank,
        title=items["d"].title,
        description=items["d"].description,
        content=items["d"].content,
        origin="success",
        cited_steps=[{"trajectory": str(again.public_id), "step": 2}],
    )
    with transaction.atomic():
        assert memory_item_support_record(item_public_id=str(items["d"].public_id), proposal=proposal, similarity=0.97)
    assert_all_agree(client, live_server, token, bank, release=1, titles={LESSONS[key][0] for key in "abd"})
