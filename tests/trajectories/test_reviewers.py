"""Comments on items and trajectories, and the per-reviewer statistics page
(issue 13, several reviewers), through Django's test client."""

from __future__ import annotations

from django.test import Client
from django.urls import reverse

from accounts.models import AuditEvent
from memories import services as memory_services
from memories.models import MemoryItem
from tests.factories import bulk_items
from trajectories.models import COMMENT_MAX, Comment, JudgmentSource, Trajectory
from trajectories.recording.deletion import trajectory_delete
from trajectories.recording.judgments import judgment_record

HTMX = {"HTTP_HX_REQUEST": "true"}


def _item_comments(bank, item):
    return reverse("trajectories:item_comments", kwargs={"bank_id": bank.public_id, "item_id": item.public_id})


def _trajectory_comments(bank, trajectory):
    return reverse(
        "trajectories:trajectory_comments", kwargs={"bank_id": bank.public_id, "trajectory_id": trajectory.public_id}
    )


# --- comments ------------------------------------------------------------------------------------


def test_reviewers_comment_on_an_item_and_everyone_reads_it_escaped(bank, item, alice, viewer):
    a, v = Client(), Client()
    a.force_login(alice)
    v.force_login(viewer)
    url = _item_comments(bank, item)
    item_page = a.get(reverse("memories:item_detail", kwargs={"bank_id": bank.public_id, "item_id": item.public_id}))
    assert f'hx-get="{url}"' in item_page.content.decode()  # the page loads the block

    block = a.post(url, {"body": "Is <script>alert(1)</script> & this\nstill true?"}, **HTMX).content.decode()

    assert "&lt;script&gt;alert(1)&lt;/script&gt; &amp; this<br>still true?" in block
    assert "<script>alert" not in block
    comment = Comment.objects.get()
    assert comment.item == item and comment.author == alice and comment.bank == bank
    event = AuditEvent.objects.get(action="comment.create")
    assert event.after == {"item": str(item.public_id), "length": len(comment.body)}  # no text in the log
    page = v.get(url).content.decode()  # a viewer reads it (a whole page without htmx) …
    assert "still true?" in page and "Add a comment" not in page
    assert v.post(url, {"body": "me too"}).status_code == 403  # … but does not write
    assert Comment.objects.count() == 1


def test_a_comment_must_have_text_within_the_limit(bank, item, alice):
    a = Client()
    a.force_login(alice)
    url = _item_comments(bank, item)
    assert "A comment needs some text." in a.post(url, {"body": "   "}, **HTMX).content.decode()
    too_long = a.post(url, {"body": "x" * (COMMENT_MAX + 1)}, **HTMX).content.decode()
    assert f"at most {COMMENT_MAX} characters (got {COMMENT_MAX + 1})" in too_long
    assert not Comment.objects.exists()


def test_only_the_author_deletes_a_comment(bank, item, alice, bob):
    a, b = Client(), Client()
    a.force_login(alice)
    b.force_login(bob)
    a.post(_item_comments(bank, item), {"body": "Alice's doubt"}, **HTMX)
    comment = Comment.objects.get()
    remove = reverse("trajectories:comment_remove", kwargs={"bank_id": bank.public_id, "comment_id": comment.public_id})
    assert remove not in b.get(_item_comments(bank, item), **HTMX).content.decode()  # no Delete for bob
    assert remove in a.get(_item_comments(bank, item), **HTMX).content.decode()

    refused = b.post(remove, **HTMX).content.decode()
    assert "Only its author can delete a comment." in refused and "Alice&#x27;s doubt" in refused
    assert Comment.objects.exists()
    block = a.post(remove, **HTMX).content.decode()
    assert "No comments yet." in block
    assert not Comment.objects.exists()
    assert AuditEvent.objects.filter(action="comment.delete", actor_user=alice).exists()


def test_comments_on_a_trajectory_go_with_it(bank, trajectory, alice, owner, stranger):
    a = Client()
    a.force_login(alice)
    url = _trajectory_comments(bank, trajectory)
    detail = reverse("trajectories:detail", kwargs={"bank_id": bank.public_id, "trajectory_id": trajectory.public_id})
    assert f'hx-get="{url}"' in a.get(detail).content.decode()
    assert "The agent looped on step 3" in a.post(url, {"body": "The agent looped on step 3"}, **HTMX).content.decode()
    assert Comment.objects.get().trajectory == trajectory

    s = Client()
    s.force_login(stranger)
    assert s.get(url).status_code == 404
    assert s.post(url, {"body": "hi"}).status_code == 404

    trajectory_delete(trajectory=Trajectory.objects.get(pk=trajectory.pk), user=owner)
    assert not Comment.objects.exists()


# --- per-reviewer statistics ---------------------------------------------------------------------


def _row(html: str, username: str) -> str:
    return html.split(f'data-reviewer="{username}"')[1].split("</tr>")[0]


def test_reviewer_stats_count_decisions_and_agreement_with_cases(client, bank, owner, alice, bob, viewer):
    items = bulk_items(bank, 3)
    for item in items:
        memory_services.memory_item_approve(item=item, author=alice)
    for item in items[:2]:  # bob overturns two of alice's approvals
        memory_services.memory_item_archive(item=MemoryItem.objects.get(pk=item.pk), author=bob)
    trajectories = [Trajectory.objects.create(bank=bank, task=f"task {n}", steps=[]) for n in range(5)]
    for n, t in enumerate(trajectories):
        judge_said = "failure" if n == 4 else "success"
        judgment_record(trajectory=t, source=JudgmentSource.LLM, label=judge_said, prompt_version="judge/v1")
        judgment_record(trajectory=t, source=JudgmentSource.HUMAN, label="success", author=alice)
    for n, t in enumerate(trajectories[:4]):  # bob agrees on three verdicts, not on the fourth
        judgment_record(trajectory=t, source=JudgmentSource.HUMAN, label="failure" if n == 3 else "success", author=bob)

    client.force_login(viewer)
    html = client.get(reverse("trajectories:reviewers", kwargs={"bank_id": bank.public_id})).content.decode()

    alice_row, bob_row, owner_row = _row(html, "alice"), _row(html, "bob"), _row(html, "owner")
    assert 'data-reviewer="viewer' not in html  # viewers do not review
    # alice: 3 approvals; 2 overturned (disagree) + 3 verdicts agreed + 1 not = 6 cases, 3 agree
    assert "<td data-peers>50% (3 of 6)</td>" in alice_row
    assert "<td data-judge>80% (4 of 5)</td>" in alice_row  # the judge said failure once
    assert '<td class="num">3</td><td class="num">0</td><td class="num">0</td>' in alice_row
    assert "<td data-peers>50% (3 of 6)</td>" in bob_row
    assert "<td data-judge>n/a (4 cases)</td>" in bob_row  # 3 of 4: too few to state a share
    assert "<td data-judge>n/a (0 cases)</td>" in owner_row and "0%" not in owner_row
    assert "8 decisions in 14 days, at most 8 a day" in alice_row  # 3 approvals + 5 verdicts, all today
    assert alice_row.count("<rect") == 1
    thirty = client.get(reverse("trajectories:reviewers", kwargs={"bank_id": bank.public_id}), {"days": "30"})
    assert "in 30 days" in _row(thirty.content.decode(), "alice")
