"""The queue's guidelines panel: open at a reviewer's first read and again after the guidelines change,
folded on the next visits, and as the reviewer last left it (folded or kept open) - per reviewer, with a
plain form post (no JavaScript needed) or an htmx one."""

from __future__ import annotations

import re

from django.urls import reverse

from memories.review.policy import review_policy_update
from memories.review.policy_models import GuidelinesRead
from tests.memories.views import HTMX

TEXT = "## Approve\n\nLessons that help on another task."


def _urls(bank):
    b = {"bank_id": bank.public_id}
    return reverse("memories:review", kwargs=b), reverse("memories:guidelines_fold", kwargs=b)


def _is_open(html: str) -> bool:
    tag = re.search(r"<details [^>]*data-guidelines[^>]*>", html).group(0)
    return " open" in tag


def test_open_at_the_first_read_folded_after_and_again_open_when_changed(client, bank, owner, reviewer):
    review_policy_update(bank=bank, actor=owner, guidelines=TEXT, decisions_required=1, distribution="open")
    queue, _fold = _urls(bank)
    client.force_login(reviewer)
    first = client.get(queue).content.decode()
    assert _is_open(first) and "Lessons that help on another task." in first
    assert not _is_open(client.get(queue).content.decode())  # read once: folded from now on
    review_policy_update(bank=bank, actor=owner, guidelines=TEXT + " Never site names.", decisions_required=1)
    changed = client.get(queue).content.decode()
    assert _is_open(changed) and "changed since you last read them" in changed
    assert not _is_open(client.get(queue).content.decode())
    client.force_login(owner)  # another reviewer has a first read of their own
    assert _is_open(client.get(queue).content.decode())


def test_the_reviewer_keeps_them_open_or_folds_them_without_javascript(client, bank, owner, reviewer):
    review_policy_update(bank=bank, actor=owner, guidelines=TEXT, decisions_required=1, distribution="open")
    queue, fold = _urls(bank)
    client.force_login(reviewer)
    client.get(queue)
    response = client.post(fold, {"folded": "0", "next": f"{queue}?dup=on"})
    assert response.status_code == 302 and response["Location"] == f"{queue}?dup=on"
    assert _is_open(client.get(queue).content.decode())
    assert _is_open(client.get(queue).content.decode())  # kept open, visit after visit
    assert client.post(fold, {"folded": "1"}, **HTMX).status_code == 204  # app.js, on the panel's toggle
    assert not _is_open(client.get(queue).content.decode())
    assert client.post(fold, {"folded": "1", "next": "https://evil.example/"})["Location"] == queue


def test_a_bank_without_guidelines_shows_them_folded_and_records_nothing(client, bank, reviewer):
    queue, _fold = _urls(bank)
    client.force_login(reviewer)
    html = client.get(queue).content.decode()
    assert not _is_open(html) and "data-guidelines-fold" not in html
    assert not GuidelinesRead.objects.exists()


def test_the_fold_is_for_members_only(client, bank, stranger, viewer):
    _queue, fold = _urls(bank)
    assert client.post(fold, {"folded": "1"})["Location"].startswith(reverse("accounts:login"))
    client.force_login(stranger)
    assert client.post(fold, {"folded": "1"}).status_code == 404
    assert not GuidelinesRead.objects.exists()
    client.force_login(viewer)  # a viewer reads the queue, so folds its own panel
    assert client.post(fold, {"folded": "1"}).status_code == 302
    assert client.get(fold).status_code == 405
