"""Decisions on an item's status: approve, reject, archive, supersede (through
the transition table), flag for review, and the near-duplicate answers (merge,
keep both)."""

from __future__ import annotations

from collections.abc import Collection, Sequence

from django.db import transaction
from django.utils import timezone

from accounts.models import ApiToken
from memories.embedding.items import item_embed_enqueue, item_embedding_is_current
from memories.items.consolidation import memory_item_support_merged
from memories.items.models import REASON_MAX, ItemStatus, MemoryItem
from memories.items.transitions import item_status_move
from memories.items.versions import item_lock, item_version_record
from memories.learning.validity import approval_lifecycle
from memories.review.collaboration import item_version_check
from memories.review.duplicates import approved_duplicates
from memories.review.policy import decision_alone_check
from memories.trust.corroboration import HUMAN_APPROVAL_NOTE, awaits_human_approval
from memories.trust.risk_events import item_risk_confirmed_announce
from memories.trust.risk_reads import risk_label, risk_out
from memories.trust.risks import item_risks_pending, memory_item_risks_confirm
from reasoningbank_site.errors import Conflict, DuplicateApproval, Invalid, RisksNeedConfirmation
from reasoningbank_site.text import counted


def risks_refusal(*, item: MemoryItem, findings: Sequence) -> RisksNeedConfirmation:
    """The refusal of an approval (or an approve vote) of ``item`` while ``findings`` are unconfirmed."""
    kinds = ", ".join(sorted({risk_label(f.kind).lower() for f in findings}))
    return RisksNeedConfirmation(
        f"“{item.title}” has {counted(len(findings), 'unconfirmed risk finding')} ({kinds}): "
        "read them, then confirm to approve it anyway.",
        findings=findings,
        details={"risks": [risk_out(f) for f in findings]},
    )


def risks_unseen(findings: Sequence, confirm_risks: bool | Collection[int]) -> list:
    """The ``findings`` that ``confirm_risks`` does not confirm: none for True, all for False, else those whose
    id is not in it (the ids a confirmation dialog showed: a finding added since it opened is not confirmed)."""
    if confirm_risks is True:
        return []
    if not confirm_risks:
        return list(findings)
    return [f for f in findings if f.pk not in confirm_risks]


@transaction.atomic
def memory_item_approve(
    *,
    item: MemoryItem,
    author,
    confirm_duplicate: bool = False,
    confirm_risks: bool | Collection[int] = False,
    seen_version: int | None = None,
    token: ApiToken | None = None,
    agreed: bool = False,
    voters: Sequence = (),
) -> MemoryItem:
    """Make the item servable. Answers at once: when its embedding is
    missing or stale, an embed task is enqueued after commit and the item is
    served from the moment it is embedded (retrieval skips items without a
    current embedding; the retrieval answer counts them as pending).
    Approving an approved item clears a review flag if it has one, records a
    human approval when its bank's corroboration policy withholds it (it is
    then served at once), and is otherwise a no-op. ``token``: the API token
    acting instead of a user (the review API), recorded in the history and the audit log. Raises
    StaleVersion when ``seen_version`` is given and the item changed since;
    DuplicateApproval (nothing changed) when an approved item of the bank is
    at or above its duplicate threshold, unless ``confirm_duplicate``;
    RisksNeedConfirmation (nothing changed) when it has unconfirmed risk
    findings, unless ``confirm_risks`` (True, or the ids of every one of
    them, as the confirmation dialog showed them; then recorded as confirmed
    by ``author``/``token``); Conflict for a superseded item; Forbidden
    (``several_decisions_required``) when the bank's review policy needs
    several decisions and ``author`` (or the token) does not decide alone
    (memories.review.policy.decides_alone), unless ``agreed``: the
    reviewers' votes agreed (memories.review.votes), ``voters`` the others
    who approved, each having confirmed the findings. Confirmed findings are
    announced to webhooks (``item.risk_confirmed``) naming who confirmed."""
    if not agreed:
        decision_alone_check(bank=item.bank, user=None if token else author, doing="approve an item")
    item_version_check(item=item, seen_version=seen_version)
    if not confirm_duplicate and item.status != ItemStatus.APPROVED:
        duplicates = approved_duplicates(item=item, threshold=item.bank.duplicate_threshold)
        if duplicates:
            best = duplicates[0]
            raise DuplicateApproval(
                f"“{item.title}” is a near-duplicate of the approved “{best.item.title}” "
                f"(similarity {best.similarity:.2f}): confirm to serve both, or merge them.",
                duplicates=duplicates,
            )

    pending = item_risks_pending(item)  # an approved item too: an edit may have found new ones
    if risks_unseen(pending, confirm_risks):
        raise risks_refusal(item=item, findings=pending)

    def approval(item: MemoryItem) -> list[str]:
        item.approved_at = timezone.now()
        item.approved_by = author
        item.status_reason = ""
        item.needs_review_reason = ""
        return ["approved_at", "approved_by", "status_reason", "needs_review_reason", *approval_lifecycle(item)]

    moved = item_status_move(item=item, to=ItemStatus.APPROVED, author=author, prepare=approval, token=token)
    if pending:
        memory_item_risks_confirm(item=item, author=author, token=token)
        item_risk_confirmed_announce(item=item, findings=pending, by=[*voters, author], token=token)
    if moved and not item_embedding_is_current(item):
        item_embed_enqueue(item.pk)
    if not moved and item.needs_review_reason:
        item.needs_review_reason = ""
        item.save(update_fields=["needs_review_reason", "updated_at"])
        item_version_record(item=item, action="approved", author=author, note="review flag cleared", token=token)
    elif not moved and awaits_human_approval(item):
        item_version_record(item=item, action="approved", author=author, note=HUMAN_APPROVAL_NOTE, token=token)
    return item


@transaction.atomic
def memory_item_reject(
    *,
    item: MemoryItem,
    author,
    reason: str = "",
    seen_version: int | None = None,
    token: ApiToken | None = None,
    agreed: bool = False,
) -> MemoryItem:
    """Decline a proposed item, keeping ``reason``; like an approval, the decision answers its review
    flag (``needs_review_reason``), which is cleared. Rejecting a rejected item
    is a no-op (``token`` as for memory_item_approve). Raises Conflict for
    any other status (an approved item is archived instead); StaleVersion
    when ``seen_version`` is given and the item changed since; Forbidden as
    memory_item_approve under a policy of several decisions."""
    if not agreed:
        decision_alone_check(bank=item.bank, user=None if token else author, doing="reject an item")

    def flag_answered(item: MemoryItem) -> list[str]:
        item.needs_review_reason = ""
        return ["needs_review_reason"]

    item_version_check(item=item, seen_version=seen_version)
    item_status_move(
        item=item, to=ItemStatus.REJECTED, author=author, reason=reason or "", prepare=flag_answered, token=token
    )
    return item


@transaction.atomic
def memory_item_archive(
    *, item: MemoryItem, author, seen_version: int | None = None, token: ApiToken | None = None
) -> MemoryItem:
    """Stop serving an approved item (it can be approved again later).
    Archiving an archived item is a no-op. Raises Conflict otherwise;
    StaleVersion when ``seen_version`` is given and the item changed since.
    ``token`` as for memory_item_approve."""
    item_version_check(item=item, seen_version=seen_version)
    item_status_move(item=item, to=ItemStatus.ARCHIVED, author=author, token=token)
    return item


@transaction.atomic
def memory_item_supersede(*, item: MemoryItem, reason: str) -> MemoryItem:
    """Retire a proposed or approved item that a newer judgment or item
    replaces (system action, no author); terminal. Superseding a superseded
    item is a no-op. Raises Conflict for rejected or archived items."""
    item_status_move(item=item, to=ItemStatus.SUPERSEDED, reason=reason or "")
    return item


@transaction.atomic
def memory_item_flag(*, item: MemoryItem, reason: str) -> MemoryItem:
    """Ask reviewers to look at an approved item again (it keeps being
    served): sets ``needs_review_reason`` (cut to REASON_MAX characters).
    Raises Invalid for an empty reason, Conflict for an item that is not
    approved."""
    reason = (reason or "").strip()
    if not reason:
        raise Invalid("A flag needs a reason.")
    item_lock(item)
    if item.status != ItemStatus.APPROVED:
        raise Conflict(f"Only approved items can be flagged; this one is {item.status}.")
    item.needs_review_reason = reason[:REASON_MAX]
    item.save(update_fields=["needs_review_reason", "updated_at"])
    item_version_record(item=item, action="flagged", note=reason)
    return item


@transaction.atomic
def memory_item_merge(
    *, item: MemoryItem, into: MemoryItem, author, note: str = "", seen_version: int | None = None
) -> MemoryItem:
    """Merge ``item`` into its near-duplicate ``into``: ``into`` stays (and is
    approved if it was only proposed), ``item`` is superseded with a reason
    naming ``into`` and ``author`` (a "merged" version by ``author``).
    ``item``'s text as it is now (reviewers' edits included) is kept on
    ``into`` as supporting evidence, with a "merged-in" version in its
    history; ``into``'s own text is not changed. Returns ``into``. Raises Invalid for the
    same item or items of different banks; Conflict for a target that is
    rejected, archived or superseded, or an item that is already retired;
    StaleVersion when ``seen_version`` (of ``item``) is given and it changed since."""
    if item.pk == into.pk:
        raise Invalid("An item cannot be merged into itself.")
    if item.bank_id != into.bank_id:
        raise Invalid("Both items must belong to the same bank.")
    item_version_check(item=item, seen_version=seen_version)
    if into.status not in (ItemStatus.PROPOSED, ItemStatus.APPROVED):
        raise Conflict(f"The target is {into.status}; merge into a proposed or approved item.")
    if item.status in (ItemStatus.SUPERSEDED, ItemStatus.ARCHIVED):
        raise Conflict(f"This item is already {item.status}.")
    if into.status == ItemStatus.PROPOSED:
        into = memory_item_approve(item=into, author=author, confirm_duplicate=True)
    who = author.get_username() if author is not None else "someone"
    reason = f"Merged into “{into.title}” ({into.public_id}) by {who}."
    if note.strip():
        reason += f" {note.strip()}"
    item_lock(into)  # the target first, as the approval above locks it
    # The reviewer's act, in the item's history as "merged by <reviewer>" (not a pipeline supersede).
    item_status_move(item=item, to=ItemStatus.SUPERSEDED, author=author, reason=reason, action="merged")
    similarity = next(
        (
            float(d["similarity"])
            for d in item.near_duplicates or []
            if isinstance(d, dict)
            and d.get("id") == str(into.public_id)
            and isinstance(d.get("similarity"), (int, float))
        ),
        None,
    )
    memory_item_support_merged(into=into, item=item, author=author, similarity=similarity)
    return into


@transaction.atomic
def memory_item_keep_both(*, item: MemoryItem, author, seen_version: int | None = None) -> MemoryItem:
    """A reviewer's answer to the near-duplicate suggestions: not duplicates.
    The suggestions are cleared (so the item leaves the "has near-duplicate"
    filter) and recorded in a "kept-both" version naming them; a proposed
    item is then approved as a lesson of its own. Raises Conflict when the
    item has no suggestions, or cannot be approved; StaleVersion when
    ``seen_version`` is given and the item changed since."""
    item_version_check(item=item, seen_version=seen_version)
    item_lock(item)
    if not item.near_duplicates:
        raise Conflict("This item has no near-duplicate suggestions to dismiss.")
    if item.status not in (ItemStatus.PROPOSED, ItemStatus.APPROVED):
        raise Conflict(f"A {item.status} item cannot be kept.")
    titles = ", ".join(f"“{d.get('title', '?')}” ({d.get('similarity', 0):.2f})" for d in item.near_duplicates)
    item.near_duplicates = []
    item.save(update_fields=["near_duplicates", "updated_at"])
    item_version_record(item=item, action="kept-both", author=author, note=f"Not a duplicate of {titles}.")
    if item.status == ItemStatus.PROPOSED:
        item = memory_item_approve(item=item, author=author, confirm_duplicate=True)
    return item
