"""An item's making: propose (distilled, one or many at once), create (by hand
or import) and edit. Its status moves are in ``memories.review.decisions``."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from django.db import transaction
from django.utils import timezone

from accounts.models import ApiToken, Bank
from memories.embedding.items import item_embed_enqueue, item_embed_inline, items_embed_inline
from memories.items.consolidation import proposals_check
from memories.items.corroboration import Sources, items_corroboration_refresh
from memories.items.events import items_status_announce
from memories.items.experiences import Experience
from memories.items.models import (
    CONTENT_MAX,
    DESCRIPTION_MAX,
    SOURCE_METADATA_MAX,
    TITLE_MAX,
    ItemOrigin,
    ItemStatus,
    MemoryItem,
    normalize_tags,
)
from memories.items.transitions import EDITABLE_STATUSES
from memories.items.versions import item_lock, item_version_record, items_created_record
from memories.learning.selectors import LearningState, bank_learning_state, item_environment
from memories.review.collaboration import item_version_check
from memories.review.policy import decides_alone, decision_alone_check, review_vote_first
from memories.trust.risks import memory_item_risk_rescan, memory_item_risks_confirm
from reasoningbank_site.errors import Conflict, Invalid
from reasoningbank_site.text import cut_text


def _clean_title(title: str) -> str:
    title = (title or "").strip()
    if not title:
        raise Invalid("A memory item needs a title.")
    if len(title) > TITLE_MAX:
        raise Invalid(f"A title is at most {TITLE_MAX} characters (got {len(title)}).")
    return title


def clean_text(value: str | None, *, name: str, limit: int) -> str:
    text = (value or "").strip()
    if len(text) > limit:
        raise Invalid(f"A {name} is at most {limit} characters (got {len(text)}).")
    return text


def _clean_tags(tags) -> list[str]:
    try:
        return normalize_tags(tags)
    except ValueError as exc:
        raise Invalid(f"Tags: {exc}.") from None


def _provenance(agents, metadata) -> tuple[list[str], list[dict]]:
    """Distinct non-empty agents (sorted) and metadata objects (in order, at most SOURCE_METADATA_MAX)."""
    distinct: list[dict] = []
    for entry in metadata or ():
        if isinstance(entry, dict) and entry and entry not in distinct:
            distinct.append(entry)
    return sorted({a for a in agents or () if a}), distinct[:SOURCE_METADATA_MAX]


def _check_origin(origin: str) -> None:
    if origin not in ItemOrigin.values:
        raise Invalid(f"origin must be one of {ItemOrigin.values}, got {origin!r}")


@transaction.atomic
def memory_item_propose(
    *,
    bank: Bank,
    title: str,
    description: str,
    content: str,
    origin: str,
    experience: Experience | None = None,
    source_task_id: str = "",
    cited_steps=(),
    model: str = "",
    prompt_version: str = "",
    verdict_label: str = "",
    source_agents=(),
    source_metadata=(),
) -> MemoryItem:
    """A distilled item awaiting review: status proposed, version 1
    ("created"), embedded inline (this runs in the worker), and
    ``near_duplicates`` set to the up-to-3 proposed/approved items of the
    bank with cosine similarity ≥ NEAR_DUPLICATE_SIMILARITY, most similar
    first — or, when the bank already holds the lesson (similarity ≥
    ``bank.duplicate_threshold``), the existing item it was recorded on as
    supporting evidence. ``source_agents`` and ``source_metadata`` (the source
    trajectories' ``agent`` and ``metadata``) are kept, distinct, for the
    retrieval filters. Over-long text (LLM output) is cut to TITLE_MAX,
    DESCRIPTION_MAX and CONTENT_MAX characters with a visible marker
    (``cut_text``). Raises Invalid for an empty title or an unknown origin."""
    (item,) = memory_items_propose(
        bank=bank,
        proposals=[ProposedItem(title=title, description=description, content=content, cited_steps=cited_steps)],
        origin=origin,
        experience=experience,
        source_task_id=source_task_id,
        model=model,
        prompt_version=prompt_version,
        verdict_label=verdict_label,
        source_agents=source_agents,
        source_metadata=source_metadata,
    )
    return item


@dataclass(frozen=True)
class ProposedItem:
    """What differs between the items one distillation proposes."""

    title: str
    description: str
    content: str
    cited_steps: Sequence[dict] = ()


def memory_items_propose(
    *,
    bank: Bank,
    proposals: Sequence[ProposedItem],
    origin: str,
    experience: Experience | None = None,
    source_task_id: str = "",
    model: str = "",
    prompt_version: str = "",
    verdict_label: str = "",
    source_agents=(),
    source_metadata=(),
    experience_trajectory_ids: Sequence[str] | None = None,
    learning: LearningState | None = None,
) -> list[MemoryItem]:
    """The items of one distillation, each as memory_item_propose makes it,
    for the cost of about one: one model call embeds them all, one query finds
    the near-duplicates of all in the bank, one insert stores them. An item's
    near-duplicates also count the items before it in ``proposals`` (as if
    they had been proposed one after the other). A proposal whose nearest
    proposed or approved item is at or above ``bank.duplicate_threshold`` is
    not stored as an item: it becomes supporting evidence on that item
    (``memory_items_support_record``, all of them at once), and the list holds that existing item
    in its place, its ``supported_by`` attribute set to the new
    MemoryItemSupport (one entry per proposal, in order).
    ``experience_trajectory_ids``: the public ids of ``experience``'s
    trajectories, oldest first, when the caller links them in this
    transaction but has not written the link yet (a new experience): a
    support without cited steps names them instead of reading them. Raises
    Invalid (nothing stored) for an empty title or an unknown origin.

    Before all that, a proposal at or above the bank's repeat threshold
    (``BankLearning.repeat_threshold``) to a rejected or archived-as-wrong
    item is recorded on that item as a repeat (a REPEATED support: its
    source trajectories are evidence there) and never queued; the list holds
    the refused item in its place, ``supported_by`` set likewise. All of
    this is the one near-duplicate check (``proposals_check``), under the
    bank's proposal lock: a distillation at the same moment waits, then sees
    these items. Each new
    item remembers its ``environment`` (``item_environment``). ``learning``:
    the bank's LearningState when the caller read it already."""
    _check_origin(origin)
    agents, metadata = _provenance(source_agents, source_metadata)
    learning = learning or bank_learning_state(bank=bank)
    environment = item_environment(agents=agents, metadata=metadata, keys=learning.learning.environment_keys)
    items = [
        MemoryItem(
            bank=bank,
            experience=experience,
            title=_clean_title(cut_text((p.title or "").strip(), TITLE_MAX)),
            description=cut_text((p.description or "").strip(), DESCRIPTION_MAX),
            content=cut_text((p.content or "").strip(), CONTENT_MAX),
            status=ItemStatus.PROPOSED,
            origin=origin,
            source_task_id=source_task_id or "",
            cited_steps=list(p.cited_steps or []),
            model=model or "",
            prompt_version=prompt_version or "",
            verdict_label=verdict_label or "",
            source_agents=agents,
            source_metadata=metadata,
            environment=environment,
        )
        for p in proposals
    ]
    if not items:
        return []
    items_embed_inline(items)
    # Refusals are raised above, before any write: inside the caller's transaction no savepoint is needed.
    with transaction.atomic(savepoint=False):
        taken = proposals_check(
            bank=bank,
            items=items,
            repeat_threshold=learning.learning.repeat_threshold if learning.has_refused else None,
            experience_trajectory_ids=experience_trajectory_ids,
        )
        fresh = [item for item, existing in zip(items, taken, strict=True) if existing is None]
        if fresh:
            MemoryItem.objects.bulk_create(fresh)
            pending = Sources()  # a new experience's run, linked after this
            for item in fresh:
                pending.add(item.pk, trajectory_ids=experience_trajectory_ids or ())
            items_corroboration_refresh(fresh, pending=pending)
            items_created_record(items=fresh, note=f"distilled ({origin})")
            items_status_announce(items=fresh)
    return [existing or item for item, existing in zip(items, taken, strict=True)]


@transaction.atomic
def memory_item_create(
    *,
    bank: Bank,
    title: str,
    description: str,
    content: str,
    author=None,
    origin: str = ItemOrigin.MANUAL,
    status: str = ItemStatus.PROPOSED,
    tags=(),
    note: str = "",
    token: ApiToken | None = None,
    consolidate: bool = True,
) -> MemoryItem:
    """An item written by hand (or imported). ``status`` is proposed (the
    default) or approved; either way it is embedded inline and goes through
    the one near-duplicate check (``proposals_check``): an item the bank
    already holds (at or above ``bank.duplicate_threshold`` to a proposed or
    approved item) is not created but recorded there as "seen again", and
    that existing item is returned, its ``supported_by`` set to the new
    MemoryItemSupport; a lesson the bank refused is recorded on the refused
    item as a repeat likewise. ``consolidate=False`` skips that check: for a
    release import, which restores a release's items exactly (it is not a
    proposal, and what it approves is what the bank then serves). ``tags`` follow ``normalize_tags``; ``note``
    goes into the first version (where an import came from). Raises
    Invalid for an empty or too long title, description or content, bad
    tags, another status, or an unknown origin. Its text is risk-scanned;
    when it is created approved, ``author`` (or ``token``) confirms the findings.

    Under a review policy of several decisions, an approved item by an
    ``author`` who does not decide alone (a reviewer) is created proposed,
    with ``author``'s approve as its first vote; by a ``token`` (or no
    author) it raises Forbidden."""
    title = _clean_title(title)
    description = clean_text(description, name="description", limit=DESCRIPTION_MAX)
    content = clean_text(content, name="content", limit=CONTENT_MAX)
    tags = _clean_tags(tags)
    if status not in (ItemStatus.PROPOSED, ItemStatus.APPROVED):
        raise Invalid(f"A new item is proposed or approved, not {status!r}.")
    _check_origin(origin)
    first_vote = False
    if status == ItemStatus.APPROVED and not decides_alone(bank=bank, user=None if token else author):
        if author is None or token is not None:
            decision_alone_check(bank=bank, user=None, doing="approve an item")
        status, first_vote = ItemStatus.PROPOSED, True
    item = MemoryItem(
        bank=bank,
        title=title,
        description=description,
        content=content,
        origin=origin,
        status=status,
        tags=tags,
        created_by=author,
    )
    item_embed_inline(item)
    if consolidate:
        learning = bank_learning_state(bank=bank)
        repeat = learning.learning.repeat_threshold if learning.has_refused else None
        (existing,) = proposals_check(bank=bank, items=[item], repeat_threshold=repeat)
        if existing is not None:
            return existing
    if status == ItemStatus.APPROVED:
        item.approved_at = timezone.now()
        item.approved_by = author
    item.save()
    item_version_record(item=item, action="created", author=author, note=note, token=token)
    if memory_item_risk_rescan(item=item) and status == ItemStatus.APPROVED:
        memory_item_risks_confirm(item=item, author=author, token=token)  # who wrote it approved, knowing
        item.needs_review_reason = ""  # so nothing waits for a review: the scan's flag is answered
        item.save(update_fields=["needs_review_reason"])
    if first_vote:
        review_vote_first(item=item, author=author)
    items_status_announce(items=[item])
    return item


@transaction.atomic
def memory_item_edit(
    *,
    item: MemoryItem,
    author,
    title: str | None = None,
    description: str | None = None,
    content: str | None = None,
    tags=None,
    note: str = "",
    seen_version: int | None = None,
    token: ApiToken | None = None,
) -> MemoryItem:
    """Change an item's text or tags (None leaves a field as is). A real
    change writes an "edited" version (tags included, so history and audit
    show them); a text change also clears the embedding and enqueues
    re-embedding after commit, while a tags-only change keeps the item
    searchable. No change writes nothing. The status is kept; ``token`` as
    for memory_item_approve. Raises Forbidden (``several_decisions_required``)
    for a change of an approved item's text by whoever does not decide alone
    under the bank's review policy (it would be served at once); Conflict for a superseded item, Invalid for an empty or too long title,
    description or content, or bad tags; StaleVersion when ``seen_version``
    is given and the item changed since (item_version_check)."""
    item_version_check(item=item, seen_version=seen_version)
    item_lock(item)
    if item.status not in EDITABLE_STATUSES:
        raise Conflict(f"A {item.status} item cannot be edited.")
    changes = {}
    if title is not None and _clean_title(title) != item.title:
        changes["title"] = _clean_title(title)
    if description is not None and description.strip() != item.description:
        changes["description"] = clean_text(description, name="description", limit=DESCRIPTION_MAX)
    if content is not None and content.strip() != item.content:
        changes["content"] = clean_text(content, name="content", limit=CONTENT_MAX)
    text_changed = bool(changes)
    if tags is not None and _clean_tags(tags) != list(item.tags):
        changes["tags"] = _clean_tags(tags)
    if not changes:
        return item
    if text_changed and item.status == ItemStatus.APPROVED:
        decision_alone_check(bank=item.bank, user=None if token else author, doing="change an approved item's text")
    for name, value in changes.items():
        setattr(item, name, value)
    fields = [*changes, "updated_at"]
    if text_changed:
        item.embedding = None
        item.embedding_hash = ""
        item.embedding_model = ""
        fields += ["embedding", "embedding_hash", "embedding_model"]
    item.save(update_fields=fields)
    item_version_record(item=item, action="edited", author=author, note=note, token=token)
    if text_changed:
        item_embed_enqueue(item.pk)
        memory_item_risk_rescan(item=item)
    return item
