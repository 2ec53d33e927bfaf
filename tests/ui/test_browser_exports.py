"""The Export page in a real headless Chromium: a viewer finds it in the bank
navigation and downloads the datasets; each file is parsed back."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from playwright.sync_api import expect

from accounts.models import Role
from memories.review.decisions import memory_item_approve
from tests import factories

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def download(page, link_name: str) -> tuple[str, list[dict]]:
    with page.expect_download() as info:
        page.get_by_role("link", name=link_name).click()
    file = info.value
    return file.suggested_filename, [json.loads(line) for line in Path(file.path()).read_text().splitlines()]


def test_a_viewer_downloads_the_datasets(page, live_server, login, bank, owner):
    viewer = factories.make_member(bank.team, Role.VIEWER)
    run = factories.make_done_trajectory(bank, verdict="")
    factories.record_verdict(run, "success", prompt_version="judge/v1")
    factories.record_verdict(run, "failure", source="human", author=owner, rationale="wrong day")
    factories.make_done_trajectory(bank, task="Another run that succeeded.")
    memory_item_approve(item=factories.propose_item(bank, run, title="Read the venue's own page"), author=owner)

    login(page, live_server, viewer, f"/banks/{bank.public_id}/")
    page.get_by_role("navigation", name="Bank").get_by_role("link", name="Export").click()
    expect(page.get_by_role("heading", name="Export datasets")).to_be_visible()

    name, rows = download(page, "Successes")
    assert name == "acme-web-agents-chat-success.jsonl"
    assert len(rows) == 1 and rows[0]["messages"][-1] == {"role": "assistant", "content": "Sundays 12:00-17:00."}
    _name, rows = download(page, "Failures")
    assert [r["metadata"]["trajectory_id"] for r in rows] == [str(run.public_id)]

    _name, rows = download(page, "Download the judge evaluation set")
    assert [(r["judge_verdict"], r["human_verdict"], r["agree"]) for r in rows] == [("success", "failure", False)]
    assert rows[0]["judge_input"].count(run.task) >= 1

    _name, rows = download(page, "Download approved memories (reasoning-bank JSONL)")
    assert [(r["title"], r["source"]) for r in rows] == [("Read the venue's own page", "success")]
