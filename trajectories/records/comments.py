"""Reviewers' comments on memory items and trajectories: write one, delete
your own, read them in order. Audited without their text (a comment on a
trajectory may quote what the agent saw, and goes with it when it is deleted)."""

from __future__ import annotations

from django.db import transaction
from django.db.models import QuerySet

from accounts.audit.actions import AuditAction
from accounts.audit.services import audit_record
from accounts.models import Bank
from memories.items.models import MemoryItem
from reasoningbank_site.errors import Forbidden, Invalid
from reasoningbank_site.text import scrub_text
from trajectories.models import Trajectory
from trajectories.records.models import COMMENT_MAX, Comment


def _target(comment: Comment) -> dict:
    if comment.item_id:
        return {"item": str(comment.item.public_id)}
    return {"trajectory": str(comment.trajectory.public_id)}


@transaction.atomic
def comment_add(
    *, bank: Bank, author, body: str, item: MemoryItem | None = None, trajectory: Trajectory | None = None
) -> Comment:
    """A comment by ``author`` on ``item`` or ``trajectory`` (exactly one, of
    ``bank``). Audited (target and length, not the text). Raises Invalid for
    an empty body, one over COMMENT_MAX characters, or a wrong target."""
    body = scrub_text((body or "").strip())
    if not body:
        raise Invalid("A comment needs some text.")
    if len(body) > COMMENT_MAX:
        raise Invalid(f"A comment is at most {COMMENT_MAX} characters (got {len(body)}).")
    if (item is None) == (trajectory is None):
        raise Invalid("A comment is on one item or one trajectory.")
    if (item or trajectory).bank_id != bank.pk:
        raise Invalid("That is not in this bank.")
    comment = Comment.objects.create(bank=bank, item=item, trajectory=trajectory, author=author, body=body)
    audit_record(
        action=AuditAction.COMMENT_CREATE,
        bank=bank,
        user=author,
        obj=comment,
        after={**_target(comment), "length": len(body)},
    )
    return comment


@transaction.atomic
def comment_delete(*, comment: Comment, user) -> None:
    """Delete a comment; only its author may. Audited. Raises Forbidden for anyone else."""
    if comment.author_id is None or comment.author_id != user.pk:
        raise Forbidden("Only its author can delete a comment.")
    audit_record(action=AuditAction.COMMENT_DELETE, bank=comment.bank, user=user, obj=comment, before=_target(comment))
    comment.delete()


def comments_on(*, item: MemoryItem | None = None, trajectory: Trajectory | None = None) -> QuerySet[Comment]:
    """The comments on ``item`` or ``trajectory``, oldest first, with their authors."""
    qs = Comment.objects.filter(item=item) if item is not None else Comment.objects.filter(trajectory=trajectory)
    return qs.select_related("author").order_by("created_at", "id")
