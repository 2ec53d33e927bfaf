"""Writes for memories: items and their history, experiences, embeddings, and
the logged retrieval served to agents.

Every change of an item's text or status appends a MemoryItemVersion
(created, edited, approved, rejected, archived, superseded, flagged).
Status changes lock the item's row first, so two reviewers cannot both
move it, and are validated: an impossible transition raises ValueError
with a message a UI can show.
"""

from __future__ import annotations

import logging
import random
import time
from dataclasses import dataclass, field

from django.db import transaction
from django.db.models import F, Q
from django.utils import timezone

from accounts.models import ApiToken, Bank, RetrievalMode
from accounts.services import audit_record
from memories import selectors
from memories.embeddings import (
    embed_text,
    embedding_hash,
    embedding_model_name,
    item_embedding_hash,
    item_embedding_text,
)
from memories.models import Arm, Experience, ItemOrigin, ItemStatus, MemoryItem, MemoryItemVersion, RetrievalEvent

log = logging.getLogger(__name__)

# Cosine similarity at or above which a new item is recorded as a near-duplicate suggestion.
NEAR_DUPLICATE_SIMILARITY = 0.85
NEAR_DUPLICATE_LIMIT = 3
TITLE_MAX = 200
REASON_MAX = 200

# Which statuses each transition may start from.
_APPROVABLE = {ItemStatus.PROPOSED, ItemStatus.REJECTED, ItemStatus.ARCHIVED}
_REJECTABLE = {ItemStatus.PROPOSED}
_ARCHIVABLE = {ItemStatus.APPROVED}
_SUPERSEDABLE = {ItemStatus.PROPOSED, ItemStatus.APPROVED}
_EDITABLE = {ItemStatus.PROPOSED, ItemStatus.APPROVED, ItemStatus.REJECTED, ItemStatus.ARCHIVED}


# --- helpers ----------------------------------------------------------------------


def _clean_title(title: str) -> str:
    title = (title or "").strip()
    if not title:
        raise ValueError("A memory item needs a title.")
    if len(title) > TITLE_MAX:
        raise ValueError(f"A title is at most {TITLE_MAX} characters (got {len(title)}).")
    return title


def _lock(item: MemoryItem) -> None:
    """Re-read ``item`` under a row lock (caller holds a transaction)."""
    item.refresh_from_db(from_queryset=MemoryItem.objects.select_for_update())


_AUDITED_FIELDS = ("title", "description", "content", "status")


def _record_version(*, item: MemoryItem, action: str, author=None, note: str = "") -> MemoryItemVersion:
    """Append the item's next version and the matching audit event (before =
    the previous version, after = now): every item change passes here, so the
    history and the audit log cannot disagree."""
    previous = item.versions.order_by("-number").first()
    version = MemoryItemVersion.objects.create(
        item=item,
        number=(previous.number if previous else 0) + 1,
        title=item.title,
        description=item.description,
        content=item.content,
        status=item.status,
        action=action,
        note=note,
        author=author,
    )
    before = {f: getattr(previous, f) for f in _AUDITED_FIELDS} if previous else None
    after = {f: getattr(version, f) for f in _AUDITED_FIELDS}
    if note:
        after["note"] = note
    audit_record(action=f"memory_item.{action}", bank=item.bank, user=author, obj=item, before=before, after=after)
    return version


def _has_current_embedding(item: MemoryItem) -> bool:
    return (
        item.embedding is not None
        and item.embedding_model == embedding_model_name()
        and item.embedding_hash == item_embedding_hash(item)
    )


def _embed_into(item: MemoryItem) -> list[str]:
    """Compute the item's embedding in place; returns the fields to save."""
    text = item_embedding_text(title=item.title, description=item.description, content=item.content)
    item.embedding = embed_text(text)
    item.embedding_hash = embedding_hash(text)
    item.embedding_model = embedding_model_name()
    return ["embedding", "embedding_hash", "embedding_model"]


def _enqueue_embed(item_pk: int) -> None:
    """Ask a worker to embed the item once the current transaction commits.
    A broker outage must not fail the write: the item stays visible as a
    pending embedding (and approval embeds inline)."""

    def send():
        from memories.tasks import memory_item_embed

        try:
            memory_item_embed.delay(item_pk)
        except Exception:
            log.exception("could not enqueue embedding of memory item %s", item_pk)

    transaction.on_commit(send)


def _near_duplicates(*, bank: Bank, vector, exclude_pk: int | None = None) -> list[dict]:
    qs = MemoryItem.objects.filter(
        bank=bank, status__in=[ItemStatus.PROPOSED, ItemStatus.APPROVED], embedding__isnull=False
    )
    if exclude_pk is not None:
        qs = qs.exclude(pk=exclude_pk)
    from pgvector.django import CosineDistance

    rows = (
        qs.annotate(distance=CosineDistance("embedding", vector))
        .only("public_id", "title")
        .order_by("distance")[:NEAR_DUPLICATE_LIMIT]
    )
    with transaction.atomic():
        selectors._iterative_scan(ef_search=selectors.HNSW_EF_SEARCH)
        rows = sorted(rows, key=lambda r: r.distance)
    return [
        {"id": str(r.public_id), "title": r.title, "similarity": round(1.0 - float(r.distance), 4)}
        for r in rows
        if 1.0 - float(r.distance) >= NEAR_DUPLICATE_SIMILARITY
    ]


# --- items ---------------------------------------------------------------------------


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
) -> MemoryItem:
    """A distilled item awaiting review: status proposed, version 1
    ("created"), embedded inline (this runs in the worker), and
    ``near_duplicates`` set to the up-to-3 proposed/approved items of the
    bank with cosine similarity ≥ NEAR_DUPLICATE_SIMILARITY, most similar
    first. An over-long title (LLM output) is cut to 200 characters.
    Raises ValueError for an empty title or an unknown origin."""
    title = (title or "").strip()[:TITLE_MAX]
    title = _clean_title(title)
    if origin not in ItemOrigin.values:
        raise ValueError(f"origin must be one of {ItemOrigin.values}, got {origin!r}")
    item = MemoryItem(
        bank=bank,
        experience=experience,
        title=title,
        description=(description or "").strip(),
        content=(content or "").strip(),
        status=ItemStatus.PROPOSED,
        origin=origin,
        source_task_id=source_task_id or "",
        cited_steps=list(cited_steps or []),
        model=model or "",
        prompt_version=prompt_version or "",
        verdict_label=verdict_label or "",
    )
    _embed_into(item)
    item.near_duplicates = _near_duplicates(bank=bank, vector=item.embedding)
    item.save()
    _record_version(item=item, action="created", note=f"distilled ({origin})")
    return item


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
) -> MemoryItem:
    """An item written by hand (or imported). ``status`` is proposed (the
    default; embedded by a worker after commit) or approved (embedded inline,
    so it is searchable at once). Raises ValueError for an empty or too long
    title, another status, or an unknown origin."""
    title = _clean_title(title)
    if status not in (ItemStatus.PROPOSED, ItemStatus.APPROVED):
        raise ValueError(f"A new item is proposed or approved, not {status!r}.")
    if origin not in ItemOrigin.values:
        raise ValueError(f"origin must be one of {ItemOrigin.values}, got {origin!r}")
    item = MemoryItem(
        bank=bank,
        title=title,
        description=(description or "").strip(),
        content=(content or "").strip(),
        origin=origin,
        status=status,
        created_by=author,
    )
    if status == ItemStatus.APPROVED:
        _embed_into(item)
        item.approved_at = timezone.now()
        item.approved_by = author
    item.save()
    _record_version(item=item, action="created", author=author)
    if status == ItemStatus.PROPOSED:
        _enqueue_embed(item.pk)
    return item


@transaction.atomic
def memory_item_edit(
    *,
    item: MemoryItem,
    author,
    title: str | None = None,
    description: str | None = None,
    content: str | None = None,
    note: str = "",
) -> MemoryItem:
    """Change an item's text (None leaves a field as is). A real change
    writes an "edited" version, clears the embedding and enqueues
    re-embedding after commit; no change writes nothing. The status is kept.
    Raises ValueError for a superseded item or an empty or too long title."""
    _lock(item)
    if item.status not in _EDITABLE:
        raise ValueError(f"A {item.status} item cannot be edited.")
    changes = {}
    if title is not None and _clean_title(title) != item.title:
        changes["title"] = _clean_title(title)
    if description is not None and description.strip() != item.description:
        changes["description"] = description.strip()
    if content is not None and content.strip() != item.content:
        changes["content"] = content.strip()
    if not changes:
        return item
    for name, value in changes.items():
        setattr(item, name, value)
    item.embedding = None
    item.embedding_hash = ""
    item.embedding_model = ""
    item.save(update_fields=[*changes, "embedding", "embedding_hash", "embedding_model", "updated_at"])
    _record_version(item=item, action="edited", author=author, note=note)
    _enqueue_embed(item.pk)
    return item


@transaction.atomic
def memory_item_approve(*, item: MemoryItem, author) -> MemoryItem:
    """Make the item servable. Embeds it inline when its embedding is
    missing or stale, so an approved item is never silently unsearchable.
    Approving an approved item clears a review flag if it has one (and is
    otherwise a no-op). Raises ValueError for a superseded item."""
    _lock(item)
    if item.status == ItemStatus.APPROVED:
        if item.needs_review_reason:
            item.needs_review_reason = ""
            item.save(update_fields=["needs_review_reason", "updated_at"])
            _record_version(item=item, action="approved", author=author, note="review flag cleared")
        return item
    if item.status not in _APPROVABLE:
        raise ValueError(f"A {item.status} item cannot be approved.")
    fields = ["status", "approved_at", "approved_by", "status_reason", "needs_review_reason", "updated_at"]
    if not _has_current_embedding(item):
        fields += _embed_into(item)
    item.status = ItemStatus.APPROVED
    item.approved_at = timezone.now()
    item.approved_by = author
    item.status_reason = ""
    item.needs_review_reason = ""
    item.save(update_fields=fields)
    _record_version(item=item, action="approved", author=author)
    return item


def _transition(
    *, item: MemoryItem, to: str, allowed: set, refusal: str, author=None, reason: str | None = None
) -> MemoryItem:
    """Move a locked item to ``to`` from one of ``allowed`` and record the
    version; already there is a no-op; anything else raises ValueError with
    ``refusal`` (formatted with the current status). ``reason`` (when not
    None) is kept as the status reason and the version's note."""
    _lock(item)
    if item.status == to:
        return item
    if item.status not in allowed:
        raise ValueError(refusal.format(status=item.status))
    item.status = to
    fields = ["status", "updated_at"]
    if reason is not None:
        item.status_reason = reason
        fields.append("status_reason")
    item.save(update_fields=fields)
    _record_version(item=item, action=to, author=author, note=reason or "")
    return item


@transaction.atomic
def memory_item_reject(*, item: MemoryItem, author, reason: str = "") -> MemoryItem:
    """Decline a proposed item, keeping ``reason``. Rejecting a rejected item
    is a no-op. Raises ValueError for any other status (an approved item is
    archived instead)."""
    return _transition(
        item=item,
        to=ItemStatus.REJECTED,
        allowed=_REJECTABLE,
        author=author,
        reason=reason or "",
        refusal="Only proposed items can be rejected; this one is {status}.",
    )


@transaction.atomic
def memory_item_archive(*, item: MemoryItem, author) -> MemoryItem:
    """Stop serving an approved item (it can be approved again later).
    Archiving an archived item is a no-op. Raises ValueError otherwise."""
    return _transition(
        item=item,
        to=ItemStatus.ARCHIVED,
        allowed=_ARCHIVABLE,
        author=author,
        refusal="Only approved items can be archived; this one is {status}.",
    )


@transaction.atomic
def memory_item_supersede(*, item: MemoryItem, reason: str) -> MemoryItem:
    """Retire a proposed or approved item that a newer judgment or item
    replaces (system action, no author); terminal. Superseding a superseded
    item is a no-op. Raises ValueError for rejected or archived items."""
    return _transition(
        item=item,
        to=ItemStatus.SUPERSEDED,
        allowed=_SUPERSEDABLE,
        reason=reason or "",
        refusal="A {status} item cannot be superseded.",
    )


@transaction.atomic
def memory_item_flag(*, item: MemoryItem, reason: str) -> MemoryItem:
    """Ask reviewers to look at an approved item again (it keeps being
    served): sets ``needs_review_reason``. Raises ValueError for an empty
    reason or an item that is not approved."""
    reason = (reason or "").strip()
    if not reason:
        raise ValueError("A flag needs a reason.")
    _lock(item)
    if item.status != ItemStatus.APPROVED:
        raise ValueError(f"Only approved items can be flagged; this one is {item.status}.")
    item.needs_review_reason = reason[:REASON_MAX]
    item.save(update_fields=["needs_review_reason", "updated_at"])
    _record_version(item=item, action="flagged", note=reason)
    return item


@transaction.atomic
def memory_item_merge(*, item: MemoryItem, into: MemoryItem, author, note: str = "") -> MemoryItem:
    """Merge ``item`` into its near-duplicate ``into``: ``into`` stays (and is
    approved if it was only proposed), ``item`` is superseded with a reason
    naming ``into`` and ``author``. Returns ``into``. Raises ValueError for
    the same item, items of different banks, a target that is rejected,
    archived or superseded, or an item that is already retired."""
    if item.pk == into.pk:
        raise ValueError("An item cannot be merged into itself.")
    if item.bank_id != into.bank_id:
        raise ValueError("Both items must belong to the same bank.")
    if into.status not in (ItemStatus.PROPOSED, ItemStatus.APPROVED):
        raise ValueError(f"The target is {into.status}; merge into a proposed or approved item.")
    if item.status in (ItemStatus.SUPERSEDED, ItemStatus.ARCHIVED):
        raise ValueError(f"This item is already {item.status}.")
    if into.status == ItemStatus.PROPOSED:
        into = memory_item_approve(item=into, author=author)
    who = author.get_username() if author is not None else "someone"
    reason = f"Merged into “{into.title}” ({into.public_id}) by {who}."
    if note.strip():
        reason += f" {note.strip()}"
    memory_item_supersede(item=item, reason=reason)
    return into


@transaction.atomic
def memory_item_keep_both(*, item: MemoryItem, author) -> MemoryItem:
    """A reviewer's answer to the near-duplicate suggestions: not duplicates.
    The suggestions are cleared (so the item leaves the "has near-duplicate"
    filter) and recorded in a "kept-both" version naming them; a proposed
    item is then approved as a lesson of its own. Raises ValueError when the
    item has no suggestions, or cannot be approved."""
    _lock(item)
    if not item.near_duplicates:
        raise ValueError("This item has no near-duplicate suggestions to dismiss.")
    if item.status not in (ItemStatus.PROPOSED, ItemStatus.APPROVED):
        raise ValueError(f"A {item.status} item cannot be kept.")
    titles = ", ".join(f"“{d.get('title', '?')}” ({d.get('similarity', 0):.2f})" for d in item.near_duplicates)
    item.near_duplicates = []
    item.save(update_fields=["near_duplicates", "updated_at"])
    _record_version(item=item, action="kept-both", author=author, note=f"Not a duplicate of {titles}.")
    if item.status == ItemStatus.PROPOSED:
        item = memory_item_approve(item=item, author=author)
    return item


# --- import / export -------------------------------------------------------------------

IMPORT_MAX_ITEMS = 1000


@dataclass
class ImportReport:
    created: list[MemoryItem] = field(default_factory=list)
    duplicates: list[int] = field(default_factory=list)  # 1-based record numbers already in the bank
    errors: list[str] = field(default_factory=list)  # "record 3: …", nothing created when any


def memory_items_import(*, bank: Bank, author, records: list) -> ImportReport:
    """Create ``records`` (dicts with title, description, content — e.g. a
    bank's export) in ``bank`` as **proposed** items of origin ``import``, so
    reviewers decide what is served. All or nothing: any invalid record
    (missing or empty field, over-long title, not an object) creates none
    and is reported by its 1-based number. A record whose title and content
    the bank already has (in any status but superseded) is skipped as a
    duplicate. At most IMPORT_MAX_ITEMS records."""
    report = ImportReport()
    if not isinstance(records, list) or not records:
        report.errors.append("The file holds no items (expected a JSON array or JSON Lines of objects).")
        return report
    if len(records) > IMPORT_MAX_ITEMS:
        report.errors.append(f"{len(records)} items; one import takes at most {IMPORT_MAX_ITEMS}.")
        return report
    clean = []
    for number, record in enumerate(records, start=1):
        if not isinstance(record, dict):
            report.errors.append(f"record {number}: expected an object with title, description and content")
            continue
        values = {name: record.get(name) for name in ("title", "description", "content")}
        missing = [name for name, value in values.items() if not isinstance(value, str) or not value.strip()]
        if missing:
            report.errors.append(f"record {number}: missing or empty {', '.join(missing)}")
            continue
        if len(values["title"].strip()) > TITLE_MAX:
            report.errors.append(f"record {number}: title longer than {TITLE_MAX} characters")
            continue
        clean.append((number, {name: value.strip() for name, value in values.items()}))
    if report.errors:
        return report
    existing = set(
        MemoryItem.objects.filter(bank=bank).exclude(status=ItemStatus.SUPERSEDED).values_list("title", "content")
    )
    with transaction.atomic():
        for number, values in clean:
            key = (values["title"], values["content"])
            if key in existing:
                report.duplicates.append(number)
                continue
            existing.add(key)
            report.created.append(memory_item_create(bank=bank, author=author, origin=ItemOrigin.IMPORT, **values))
    return report


def memory_item_embed_refresh(*, item_id: int) -> bool:
    """Embed item ``item_id`` if its embedding is missing or stale. Returns
    True when it wrote an embedding, False when there was nothing to do (no
    such item, or already current). The write is a compare-and-set on the
    text that was embedded, so an edit racing with this never ends up with
    the old text's vector. Not atomic on purpose: no transaction is held
    open while the model runs."""
    item = MemoryItem.objects.filter(pk=item_id).first()
    if item is None or _has_current_embedding(item):
        return False
    text = item_embedding_text(title=item.title, description=item.description, content=item.content)
    vector = embed_text(text)
    updated = MemoryItem.objects.filter(
        pk=item.pk, title=item.title, description=item.description, content=item.content
    ).update(embedding=vector, embedding_hash=embedding_hash(text), embedding_model=embedding_model_name())
    return bool(updated)


def memory_items_embed_pending(*, limit: int = 200) -> int:
    """Sweeper: embed proposed and approved items that have no current
    embedding (an enqueue lost to a broker outage, a crashed worker, or a
    change of RB_EMBEDDING_MODEL), oldest change first, at most ``limit``.
    Returns how many embeddings were written. Safe to run concurrently
    (each write is a compare-and-set)."""
    model = embedding_model_name()
    pending = (
        MemoryItem.objects.filter(status__in=[ItemStatus.PROPOSED, ItemStatus.APPROVED])
        .filter(Q(embedding_hash="") | Q(embedding_model__lt=model) | Q(embedding_model__gt=model))
        .order_by("updated_at")
        .values_list("pk", flat=True)[: max(0, int(limit))]
    )
    return sum(memory_item_embed_refresh(item_id=pk) for pk in list(pending))


# --- experiences ------------------------------------------------------------------------


@transaction.atomic
def experience_create(*, bank: Bank, task: str, task_id: str = "") -> Experience:
    """A past task of the bank (the paper's memory entry), its text embedded
    inline for experience-mode retrieval. Raises ValueError for an empty task."""
    task = (task or "").strip()
    if not task:
        raise ValueError("An experience needs the task text.")
    return Experience.objects.create(bank=bank, task=task, task_id=task_id or "", embedding=embed_text(task))


# --- retrieval ----------------------------------------------------------------------------


@dataclass
class RetrievalResult:
    items: list[tuple[MemoryItem, float]]
    system_block: str
    pending_embeddings: int
    mode: str
    k: int
    latency_ms: float
    bank_has_approved: bool = field(default=True)
    arm: str = field(default=Arm.TREATMENT)
    event: RetrievalEvent | None = None  # None for a preview


def retrieval_preview(*, bank: Bank, query: str, k: int | None = None, task_id: str = "") -> RetrievalResult:
    """What an agent of ``bank`` would be served for ``query`` (treatment
    arm), without logging or counting anything — the playground's view and
    the first half of retrieval_perform. Items mode: the top-k approved
    items by similarity to the query; experiences mode: all approved items
    of the top-n most similar past tasks. ``k`` defaults to bank.top_k and
    is capped at 20; bank.min_similarity applies; a ``task_id`` excludes
    what was learnt from that same task. Raises ValueError for an empty query."""
    started = time.perf_counter()
    query = (query or "").strip()
    if not query:
        raise ValueError("The query is empty.")
    k = min(max(int(k if k is not None else bank.top_k), 1), selectors.MAX_K)
    vector = embed_text(query)
    if bank.retrieval_mode == RetrievalMode.EXPERIENCES:
        pairs = selectors.experiences_search(
            bank=bank, vector=vector, n=k, min_similarity=bank.min_similarity, exclude_task_id=task_id or ""
        )
    else:
        pairs = selectors.approved_items_search(
            bank=bank, vector=vector, k=k, min_similarity=bank.min_similarity, exclude_task_id=task_id or ""
        )
    counts = selectors.embedding_counts(bank=bank)
    return RetrievalResult(
        items=pairs,
        system_block=selectors.system_block_render([item for item, _ in pairs]),
        pending_embeddings=counts.pending,
        bank_has_approved=counts.has_approved,
        mode=bank.retrieval_mode,
        k=k,
        latency_ms=(time.perf_counter() - started) * 1000.0,
    )


def retrieval_perform(
    *, bank: Bank, query: str, k: int | None = None, task_id: str = "", token: ApiToken | None = None
) -> RetrievalResult:
    """Answer an agent's retrieval (see retrieval_preview) and log it. With
    probability bank.holdout_fraction the retrieval is in the holdout arm:
    nothing is served, but the event records what would have been, so lift
    can be measured. Writes one RetrievalEvent and bumps the served items'
    counters with one query. Raises ValueError for an empty query."""
    started = time.perf_counter()
    result = retrieval_preview(bank=bank, query=query, k=k, task_id=task_id)
    recorded = [{"id": str(item.public_id), "score": score} for item, score in result.items]
    if bank.holdout_fraction > 0 and random.random() < bank.holdout_fraction:
        result.arm, result.items, result.system_block = Arm.HOLDOUT, [], ""
    now = timezone.now()
    result.latency_ms = (time.perf_counter() - started) * 1000.0
    with transaction.atomic():
        result.event = RetrievalEvent.objects.create(
            bank=bank,
            token=token,
            query=query.strip(),
            task_id=task_id or "",
            mode=result.mode,
            k=result.k,
            arm=result.arm,
            results=recorded,
            latency_ms=round(result.latency_ms, 2),
        )
        if result.items:
            MemoryItem.objects.filter(pk__in=[item.pk for item, _ in result.items]).update(
                served_count=F("served_count") + 1, last_served_at=now
            )
    for item, _ in result.items:
        item.served_count += 1
        item.last_served_at = now
    return result
