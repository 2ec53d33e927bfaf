"""The comment services against the real database: one target in the bank,
text scrubbed and bounded, audited without the text, deleted only by the
author, read oldest first."""

import pytest

from accounts.models import AuditEvent
from reasoningbank_site.errors import Forbidden, Invalid
from tests import factories
from trajectories.records.comments import comment_add, comment_delete, comments_on
from trajectories.records.models import COMMENT_MAX, Comment

pytestmark = pytest.mark.django_db


def test_a_comment_is_audited_with_its_target_and_length_not_its_text(bank, item, alice):
    comment = comment_add(bank=bank, author=alice, body="  Cites the wrong\x00 step  ", item=item)
    assert comment.body == "Cites the wrong\ufffd step"  # trimmed, NUL replaced
    event = AuditEvent.objects.get(action="comment.create")
    assert event.after == {"item": str(item.public_id), "length": len(comment.body)}
    assert "wrong" not in str(event.before) + str(event.after) + event.object_repr


@pytest.mark.parametrize("body", ["", "   ", "x" * (COMMENT_MAX + 1)])
def test_empty_or_over_long_text_is_refused(bank, item, alice, body):
    with pytest.raises(Invalid):
        comment_add(bank=bank, author=alice, body=body, item=item)
    assert not Comment.objects.exists()


def test_a_comment_is_on_exactly_one_target_of_this_bank(bank, item, trajectory, alice, other_bank):
    with pytest.raises(Invalid, match="one item or one trajectory"):
        comment_add(bank=bank, author=alice, body="both", item=item, trajectory=trajectory)
    with pytest.raises(Invalid, match="one item or one trajectory"):
        comment_add(bank=bank, author=alice, body="neither")
    theirs = factories.make_done_trajectory(other_bank)
    with pytest.raises(Invalid, match="not in this bank"):
        comment_add(bank=bank, author=alice, body="elsewhere", trajectory=theirs)
    assert not Comment.objects.exists()


def test_only_the_author_deletes_and_the_deletion_is_audited(bank, trajectory, alice, bob):
    comment = comment_add(bank=bank, author=alice, body="Step 3 is the lesson", trajectory=trajectory)
    with pytest.raises(Forbidden):
        comment_delete(comment=comment, user=bob)
    assert Comment.objects.filter(pk=comment.pk).exists()
    comment_delete(comment=comment, user=alice)
    assert not Comment.objects.filter(pk=comment.pk).exists()
    assert AuditEvent.objects.get(action="comment.delete").before == {"trajectory": str(trajectory.public_id)}


def test_comments_are_read_oldest_first_per_target(bank, item, trajectory, alice, bob):
    first = comment_add(bank=bank, author=alice, body="first", item=item)
    second = comment_add(bank=bank, author=bob, body="second", item=item)
    on_trajectory = comment_add(bank=bank, author=bob, body="elsewhere", trajectory=trajectory)
    assert list(comments_on(item=item)) == [first, second]
    assert list(comments_on(trajectory=trajectory)) == [on_trajectory]
