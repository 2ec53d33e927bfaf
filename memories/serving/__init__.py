"""What a bank serves its agents: the one definition every surface uses.

``served_release`` says which release a bank serves now (production, a canary
with its share, none yet) and, for a retrieval, which arm a draw falls in
(holdout, canary, production). ``served_q`` says which items a release may
serve: the release's members (or, for a production that is the approved set,
the approved items), never one archived as wrong, rejected or superseded,
suspended, past its validity, with a risk finding nobody confirmed, below the
bank's serving tier, or outside the request's filters. ``served_items`` is
that set for a bank, with each item's text as released: what ``GET /memories``,
MCP ``list_memories``, the Agent Skills folder, the zip, the AGENTS.md section
and the served export hold, and what ``/retrieve`` searches (in both modes,
through ``served_q``)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from django.db.models import BooleanField, ExpressionWrapper, Q, QuerySet

from accounts.models import Bank
from memories.models import ItemStatus, MemoryItem
from memories.selectors.learning import refused_q, servable_q
from memories.selectors.releases import (
    latest_version_subquery,
    release_item_exists,
    release_serving,
    release_texts_apply,
    release_version_subquery,
)
from memories.selectors.retrieval.filters import NO_FILTERS, RetrievalFilters


class Arm:
    PRODUCTION = "production"
    CANARY = "canary"
    HOLDOUT = "holdout"


@dataclass(frozen=True)
class ServedRelease:
    """Which release is served: ``number`` (None before the bank's first
    release; in the holdout arm, the release production would have served),
    ``searched`` (the release whose members are served, or None when
    production is the approved set itself, so the search filters on the
    status as it always has), ``arm``, and the canary's number and share
    (None and 0 without one)."""

    number: int | None
    searched: int | None
    arm: str = Arm.PRODUCTION
    canary: int | None = None
    canary_fraction: float = 0.0

    @property
    def held_out(self) -> bool:
        return self.arm == Arm.HOLDOUT


def served_release(*, bank: Bank, draw: float | None = None) -> ServedRelease:
    """The release ``bank`` serves, read from the labels copied on its row (no
    query). Without ``draw``: production, what every list and file holds.
    With ``draw`` (uniform in [0, 1), one per retrieval): the retrieval's arm,
    holdout below the bank's holdout fraction, then the canary for its share
    of all retrievals, else production."""
    labels = release_serving(bank=bank)
    production, canary, share = labels.production, labels.canary, labels.canary_fraction
    arm = Arm.PRODUCTION
    if draw is not None:
        if bank.holdout_fraction > 0 and draw < bank.holdout_fraction:
            arm = Arm.HOLDOUT
        elif canary is not None and draw < bank.holdout_fraction + share:
            arm = Arm.CANARY
    number = canary if arm == Arm.CANARY else production
    return ServedRelease(
        number=number,
        searched=release_searched(bank=bank, number=number),
        arm=arm,
        canary=canary,
        canary_fraction=share,
    )


def release_searched(*, bank: Bank, number: int | None) -> int | None:
    """The release whose members are served to serve release ``number``: None
    (the approved items) for none, and for a production release that is the
    approved set (a bank that publishes automatically, at its newest release)."""
    labels = release_serving(bank=bank)
    if number is None or (number == labels.production and labels.production_is_draft):
        return None
    return number


def served_q(*, searched: int | None, filters: RetrievalFilters = NO_FILTERS) -> Q:
    """The items that may be served from release ``searched`` (None: the
    approved items), as a Q on MemoryItem that every search and list puts in
    its own query. A release's members are served whatever their status now
    (a rollback serves an archived item again), except one a reviewer refused
    (rejected, or archived as wrong) or that was superseded; any release
    leaves out suspended and expired items, and ``filters`` (whose Q also
    leaves out unconfirmed risk findings and what the bank's trust policy
    refuses)."""
    if searched is None:
        members = Q(status=ItemStatus.APPROVED)
    else:
        members = release_item_exists(searched) & ~refused_q() & ~Q(status=ItemStatus.SUPERSEDED)
    return filters.q() & servable_q() & members  # the order the search's statement has always had


@dataclass
class ServedItems:
    """``items``: what release ``release`` serves (None: the bank has no
    release yet), newest approval first; read them through ``page`` (or
    ``page_of``) to get each item with its text as released."""

    release: ServedRelease
    items: QuerySet[MemoryItem]

    @property
    def number(self) -> int | None:
        return self.release.number

    def page(self, offset: int, limit: int) -> list[MemoryItem]:
        return self.page_of(self.items[offset : offset + limit])

    def page_of(self, items: Iterable[MemoryItem]) -> list[MemoryItem]:
        """``items`` (``self.items`` narrowed, sliced or with fewer columns) read, as released."""
        return self._as_released(list(items))

    def _as_released(self, rows: list[MemoryItem]) -> list[MemoryItem]:
        """``rows`` with the text of their version in the release (each keeps ``served_version``)."""
        if self.release.searched is not None:
            release_texts_apply([(item, None) for item in rows], number=self.release.searched)
            for item in rows:
                item.served_version = item.release_version
        else:
            for item in rows:
                item.served_version = item.latest_version
        return rows


def served_items(
    *, bank: Bank, release: ServedRelease | None = None, filters: RetrievalFilters = NO_FILTERS
) -> ServedItems:
    """What ``bank`` serves from ``release`` (default: production, as
    served_release gives it) under ``filters``, newest approval first, with
    the embedding deferred and each item's version (``latest_version``, and
    ``release_version`` for a release's members) annotated."""
    release = release if release is not None else served_release(bank=bank)
    qs = MemoryItem.objects.filter(served_q(searched=release.searched, filters=filters), bank=bank)
    qs = qs.annotate(latest_version=latest_version_subquery())
    if release.searched is not None:
        qs = qs.annotate(release_version=release_version_subquery(release.searched))
    return ServedItems(release=release, items=qs.defer("embedding").order_by("-approved_at", "-id"))


def served_item_get(*, bank: Bank, public_id) -> tuple[MemoryItem, ServedRelease]:
    """One item ``bank`` serves (from production) by public id, with its text
    as released. Raises MemoryItem.DoesNotExist for an unknown id, another
    bank's item, or one not served."""
    served = served_items(bank=bank)
    rows = served.page_of(served.items.filter(public_id=public_id)[:1])
    if not rows:
        raise MemoryItem.DoesNotExist
    return rows[0], served.release


def served_flag(*, bank: Bank) -> ExpressionWrapper:
    """Whether each row (a MemoryItem of ``bank``) is served by production, as an annotation: a list page
    reads it with its rows, in the same query."""
    return ExpressionWrapper(served_q(searched=served_release(bank=bank).searched), output_field=BooleanField())
