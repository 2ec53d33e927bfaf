"""Comments on items and trajectories through Django's test client: who
writes, reads and deletes them, their limits, and that they go with what
they are on."""

from __future__ import annotations

from django.test import Client
from django.urls import reverse

from accounts.models import AuditEvent
from trajectories.models import Trajectory
from trajectories.records.deletion import trajectory_delete
from trajectories.records.models import COMMENT_MAX, Comment

HTMX = {"HTTP_HX_REQUEST": "true"}


def _item_comments(bank, item):
    return reverse("trajectories:item_comments", kwargs={"bank_id": bank.public_id, "item_id": item.public_id})


def _trajectory_comments(bank, trajectory):
    return reverse(
        "trajectories:trajectory_comments", kwargs={"bank_id": bank.public_id, "trajectory_id": trajectory.public_id}
    )


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
