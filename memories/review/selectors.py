"""What reviewers read: the queue of proposed items, the item list by status,
one item with its near-duplicates, history and sources. Plain querysets with
bounded queries; writes go through the domain services (``memories.items.services``, ``memories.review.decisions``).

The agent filter follows item → experience → trajectories by lookup name
only, so this module never imports the trajectories app."""

from __future__ import annotations

import difflib
import uuid
from dataclasses import dataclass
from datetime import date
from typing import NamedTuple

from django.db import connection
from django.db.models import Count, Exists, OuterRef, Q, QuerySet, Subquery

from accounts.models import Bank
from memories.items.corroboration import COUNT_FIELDS
from memories.items.models import (
    ItemOrigin,
    ItemStatus,
    MemoryItem,
    MemoryItemSupport,
    MemoryItemVersion,
    item_search_vector,
)
from memories.learning.selectors import LIFECYCLE_FIELDS, lifecycle_items
from memories.trust.risk_reads import has_unconfirmed_risks, unconfirmed_risk_count
from reasoningbank_site.search import text_search

REVIEWERS_DISAGREE = "Reviewers disagree"  # how memories.review.votes marks a conflict

LIST_FIELDS = (
    "id",
    "experience_id",
    "public_id",
    "bank_id",
    "title",
    "description",
    "status",
    "origin",
    "verdict_label",
    "model",  # the queue row labels what the demo LLM made
    "near_duplicates",
    "needs_review_reason",
    "created_at",
    "updated_at",
    "served_count",
    "cited_steps",
    "tags",
    "support_count",
    *COUNT_FIELDS,
    *LIFECYCLE_FIELDS,
)


def _search(qs: QuerySet, text: str) -> QuerySet:
    """Items whose title, description or content hold every word of ``text``
    (as a word prefix), answered from the GIN index."""
    return text_search(qs, item_search_vector(), text)


def review_queue(
    *,
    bank: Bank,
    origin: str = "",
    verdict: str = "",
    agent: str = "",
    date_from: date | None = None,
    date_to: date | None = None,
    has_duplicate: bool = False,
    disagreement: bool = False,
    conflict: bool = False,
    text: str = "",
    state: str = "",
    sort: str = "",
    has_risks: bool = False,
) -> QuerySet[MemoryItem]:
    """Proposed items of ``bank``, narrowed by the queue filters
    (``disagreement``: distilled from, or supported by, a trajectory whose reported outcome differs from
    its verdict (``agent_judge_disagree``);
    ``conflict``: its independent reviewer decisions disagree, for an owner or admin to resolve;
    ``has_risks``: only items with unconfirmed risk findings), in the order ``sort`` names
    (QUEUE_SORTS; oldest first by default); with a ``state`` (LifecycleState), the items in that
    state instead."""
    qs = (
        lifecycle_items(bank=bank, state=state)
        if state
        else MemoryItem.objects.filter(bank=bank, status=ItemStatus.PROPOSED)
    )
    if origin:
        qs = qs.filter(origin=origin)
    if verdict:
        qs = qs.filter(verdict_label=verdict)
    if agent:
        qs = qs.filter(experience__trajectories__agent=agent).distinct()
    if date_from:
        qs = qs.filter(created_at__date__gte=date_from)
    if date_to:
        qs = qs.filter(created_at__date__lte=date_to)
    if has_duplicate:
        qs = qs.exclude(near_duplicates=[])
    if disagreement:
        qs = qs.filter(_disputed())
    if conflict:
        qs = qs.filter(needs_review_reason__startswith=REVIEWERS_DISAGREE)
    if has_risks:
        qs = qs.filter(has_unconfirmed_risks())
    qs = _search(qs, text)
    qs = qs.annotate(risk_count=unconfirmed_risk_count())
    qs = qs.only(*LIST_FIELDS, "content")  # rows preview the content
    if sort == "disagreement":
        qs = qs.annotate(disputed=_disputed())
    return qs.order_by(*QUEUE_SORTS.get(sort, QUEUE_SORTS[""])[1])


# The queue's orders: key → (label, ORDER BY); "" is the default, oldest first.
QUEUE_SORTS = {
    "": ("oldest first", ("created_at", "id")),
    "newest": ("newest first", ("-created_at", "-id")),
    "support": ("seen again most", ("-support_count", "created_at", "id")),
    "disagreement": ("agent and judge disagree first", ("-disputed", "created_at", "id")),
}


def agent_judge_disagree() -> Q:
    """The one definition of a disputed run, for the trajectory model: its agent reported one outcome while
    the verdict says the other. The dashboard's count, the trajectory list's filter and the queue's use it."""
    return Q(outcome="success", verdict="failure") | Q(outcome="failure", verdict="success")


def _disagreeing_trajectories() -> QuerySet:
    """Trajectories whose agent reported one outcome while the verdict says the other."""
    # The trajectory model by Bank's relation name: this app never imports the trajectories app.
    trajectories = Bank._meta.get_field("trajectories").related_model.objects
    return trajectories.filter(agent_judge_disagree())


def _disputed() -> Exists:
    """An item a disputed run stands behind: distilled from it, or supported by it (its lesson distilled again
    there, recorded as evidence on this item instead of a new proposal)."""
    runs = _disagreeing_trajectories()
    supports = MemoryItemSupport.objects.filter(item_id=OuterRef("pk"))
    return Exists(runs.filter(experience_id=OuterRef("experience_id"))) | Exists(
        supports.filter(Exists(runs.filter(experience_id=OuterRef("experience_id"))))
    )


def queue_rows_claimed(*, items) -> None:
    """Set ``claimed_outcome`` on each of ``items`` (a page of queue rows) that a disputed run stands behind
    (``_disputed``): what its agent claimed, the item's own run first, else its latest supporting one (one query)."""
    for item in items:
        item.claimed_outcome = ""
    # Only an item with a source run or with support can have a disputed run behind it.
    ids = [item.pk for item in items if item.experience_id or getattr(item, "support_count", 0)]
    if not ids:
        return
    own = _disagreeing_trajectories().filter(experience_id=OuterRef("experience_id")).values("outcome")[:1]
    backing = (
        MemoryItemSupport.objects.filter(item_id=OuterRef("pk"))
        .annotate(claim=Subquery(own))  # the support's run: OuterRef is the support's experience here
        .exclude(claim=None)
        .order_by("-created_at", "-id")
        .values("claim")[:1]
    )
    rows = (
        MemoryItem.objects.filter(pk__in=ids)
        .annotate(own=Subquery(own), backing=Subquery(backing))
        .values_list("pk", "own", "backing")
    )
    claimed = {pk: own_claim or backing_claim or "" for pk, own_claim, backing_claim in rows}
    for item in items:
        item.claimed_outcome = claimed.get(item.pk, "")


def item_list(*, bank: Bank, status: str = "", text: str = "") -> QuerySet[MemoryItem]:
    """Items of ``bank`` in one status (all when empty), newest change first."""
    qs = MemoryItem.objects.filter(bank=bank)
    if status:
        qs = qs.filter(status=status)
    qs = _search(qs, text)
    return qs.only(*LIST_FIELDS).order_by("-updated_at", "-id")


def item_status_counts(*, bank: Bank) -> dict[str, int]:
    """How many items ``bank`` has in each status (every status present, 0 if none)."""
    counts = {s: 0 for s in ItemStatus.values}
    # Count("*"), not Count("id"): an index-only scan of (bank, status, …), 3x faster than reading the rows.
    for row in MemoryItem.objects.filter(bank=bank).values("status").annotate(n=Count("*")).order_by():
        counts[row["status"]] = row["n"]
    return counts


def review_agents(*, bank: Bank) -> list[str]:
    """Agent names seen in ``bank``'s latest 5,000 trajectories (for the
    queue's and the trajectory list's agent filter), at most 200. One backward
    scan of the (bank, created_at) index, distinct in SQL, so its cost does not
    grow with the bank (a ``pk IN (latest 5,000)`` filter is planned as a scan
    of every trajectory)."""
    # The trajectory table by Bank's relation name: this app never imports the trajectories app.
    table = Bank._meta.get_field("trajectories").related_model._meta.db_table
    with connection.cursor() as cur:
        cur.execute(
            f"SELECT DISTINCT agent FROM (SELECT agent FROM {table} WHERE bank_id = %s"
            " ORDER BY created_at DESC LIMIT 5000) recent WHERE agent <> '' ORDER BY 1 LIMIT 200",
            [bank.pk],
        )
        return [row[0] for row in cur.fetchall()]


def item_for_bank(*, bank: Bank, public_id) -> MemoryItem:
    """One item of ``bank`` by public id; raises MemoryItem.DoesNotExist
    (an item of another bank does not exist for this caller)."""
    return MemoryItem.objects.select_related("created_by", "approved_by", "experience").get(
        bank=bank, public_id=public_id
    )


def items_by_public_ids(*, bank: Bank, public_ids) -> QuerySet[MemoryItem]:
    """The items of ``bank`` among ``public_ids`` (others silently absent)."""
    return MemoryItem.objects.filter(bank=bank, public_id__in=list(public_ids))


@dataclass
class NearDuplicate:
    item: MemoryItem
    similarity: float


def item_near_duplicates(*, item: MemoryItem) -> list[NearDuplicate]:
    """The near-duplicates recorded at proposal that still exist in the bank,
    most similar first. Suggestions whose ids do not parse are skipped."""
    wanted: dict[str, float] = {}
    for entry in item.near_duplicates or []:
        if isinstance(entry, dict) and entry.get("id"):
            try:
                wanted[str(entry["id"])] = float(entry.get("similarity") or 0.0)
            except (TypeError, ValueError):
                continue
    if not wanted:
        return []
    ids = []
    for key in wanted:
        try:
            ids.append(uuid.UUID(key))
        except ValueError:
            continue
    found = MemoryItem.objects.filter(bank_id=item.bank_id, public_id__in=ids).exclude(pk=item.pk)
    result = [NearDuplicate(item=other, similarity=wanted[str(other.public_id)]) for other in found]
    return sorted(result, key=lambda d: -d.similarity)


@dataclass
class VersionView:
    version: MemoryItemVersion
    changes: list[tuple[str, list[tuple[str, str]]]]  # (field, [(op, text)]) with op in "=", "+", "-"


def _word_diff(old: str, new: str) -> list[tuple[str, str]]:
    a, b = old.split(" "), new.split(" ")
    out: list[tuple[str, str]] = []
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes():
        if op == "equal":
            out.append(("=", " ".join(a[i1:i2])))
        else:
            if i2 > i1:
                out.append(("-", " ".join(a[i1:i2])))
            if j2 > j1:
                out.append(("+", " ".join(b[j1:j2])))
    return out


def item_history(*, item: MemoryItem) -> list[VersionView]:
    """Every version of ``item``, newest first, each with word diffs of the
    text fields against the version before it (difflib), and the tags
    removed and added."""
    versions = list(
        MemoryItemVersion.objects.filter(item=item).select_related("author", "actor_token").order_by("number")
    )
    views: list[VersionView] = []
    previous = None
    for version in versions:
        changes = []
        if previous is not None:
            for field in ("title", "description", "content"):
                old, new = getattr(previous, field), getattr(version, field)
                if old != new:
                    changes.append((field, _word_diff(old, new)))
            if list(previous.tags) != list(version.tags):
                removed = [("-", t) for t in previous.tags if t not in version.tags]
                changes.append(("tags", removed + [("+", t) for t in version.tags if t not in previous.tags]))
        views.append(VersionView(version=version, changes=changes))
        previous = version
    views.reverse()
    return views


DISTILLED_ORIGINS = (ItemOrigin.SUCCESS, ItemOrigin.FAILURE, ItemOrigin.MATTS_PARALLEL, ItemOrigin.MATTS_SEQUENTIAL)


class ItemSources(NamedTuple):
    trajectory_ids: list[str]  # public ids (strings) of source trajectories that still exist
    deleted: int  # source trajectories deleted since (their links are not shown)


def trajectory_tasks(*, bank_id: int, public_ids) -> dict[str, str]:
    """public id (string) → task of those of ``bank_id``'s trajectories among ``public_ids`` (one query), so
    evidence lists name a trajectory by its task rather than by an id."""
    keys = []
    for value in public_ids:
        try:
            keys.append(uuid.UUID(str(value)))
        except ValueError:
            continue
    if not keys:
        return {}
    # The trajectory model by Bank's relation name: this app never imports the trajectories app.
    trajectories = Bank._meta.get_field("trajectories").related_model.objects
    rows = trajectories.filter(bank_id=bank_id, public_id__in=keys).values_list("public_id", "task")
    return {str(pid): task for pid, task in rows}


def item_sources(*, item: MemoryItem) -> ItemSources:
    """The trajectories ``item`` was distilled from: those it cites, in
    citation order, else those of its experience; and how many of them were
    deleted since (a distilled item whose sources are all gone counts at
    least one). Two queries at most."""
    cited: list[str] = []
    for cite in item.cited_steps or []:
        if isinstance(cite, dict) and cite.get("trajectory"):
            tid = str(cite["trajectory"])
            if tid not in cited:
                cited.append(tid)
    keys = []
    for tid in cited:
        try:
            keys.append(uuid.UUID(tid))
        except ValueError:
            continue
    existing = set()
    if keys:
        # The trajectory model by Bank's relation name: this app never imports the trajectories app.
        trajectories = Bank._meta.get_field("trajectories").related_model.objects
        rows = trajectories.filter(bank_id=item.bank_id, public_id__in=keys).values_list("public_id", flat=True)
        existing = {str(p) for p in rows}
    ids = [tid for tid in cited if tid in existing]
    deleted = len(keys) - len(existing)
    if not cited and item.experience_id:
        # No valid citation: fall back to the trajectories of its experience (by relation name).
        ids = [
            str(p) for p in item.experience.trajectories.order_by("created_at").values_list("public_id", flat=True)[:5]
        ]
    if not ids and not deleted and item.origin in DISTILLED_ORIGINS:
        deleted = 1  # distilled from trajectories that no longer exist
    return ItemSources(ids, deleted)
