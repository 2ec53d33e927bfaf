"""Comments in a real headless Chromium: a comment longer than the limit is
refused with a message and kept in full (not cut without a word), and an
empty one says what is missing."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from trajectories.records.models import Comment

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_too_long_and_empty_comments_get_a_message(page, live_server, login, bank, owner, trajectory):
    url = f"/banks/{bank.public_id}/trajectories/{trajectory.public_id}/comments/"
    login(page, live_server, owner, url)
    body = page.locator("#comment-body")
    long_text = "word " * 505 + "end"  # 2,528 characters
    body.fill(long_text)
    assert len(body.input_value()) == len(long_text)
    page.get_by_role("button", name="Comment").click()
    expect(page.locator("[data-comment-error]")).to_have_text("A comment is at most 2000 characters (got 2528).")
    assert len(page.locator("#comment-body").input_value()) == len(long_text)  # kept, to shorten
    page.locator("#comment-body").fill("")
    page.get_by_role("button", name="Comment").click()
    expect(page.locator("[data-comment-error]")).to_have_text("A comment needs some text.")
    assert not Comment.objects.exists()
