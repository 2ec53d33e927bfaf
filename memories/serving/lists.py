"""The served items as lists: what GET /memories, MCP list_memories, the agent files and the served export hold
(the set ``served_q`` defines, with each item's text as released), and the served flag a list page reads with
its rows. Why an item is or is not served is its lifecycle's (memories.items.lifecycle)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from django.db.models import BooleanField, ExpressionWrapper, QuerySet

from accounts.models import Bank
from memories.items.models import MemoryItem
from memories.serving import (
    NO_FILTERS,
    RetrievalFilters,
    ServedRelease,
    latest_version_subquery,
    release_texts_apply,
    release_version_subquery,
    served_q,
    served_release,
)


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
