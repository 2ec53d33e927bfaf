"""Reading a big queryset in order, a chunk at a time, for a streamed download.

``QuerySet.iterator()`` on PostgreSQL reads through a server-side cursor, and
outside a transaction (a streamed response runs after the view returned, in
autocommit) Django declares it ``WITH HOLD``: PostgreSQL then runs the whole
query to its end and stores the result before the first row comes back, so
the first byte of an export waits for every row of the bank. ``keyset_chunks``
instead reads ``chunk`` rows per query, each query starting after the last row
read (``(first, second) > (last values)``), so each is an index range read of
``chunk`` rows, whatever the table's size."""

from __future__ import annotations

from collections.abc import Iterator

from django.db.models import Q, QuerySet


def keyset_page(qs: QuerySet, *, order: tuple[str, str], after: tuple | None) -> QuerySet:
    """``qs`` in ``order`` (both fields ascending, or both descending with "-"), from the first row after
    ``after`` (the last row's values of both fields; None: from the start). Slice it for one chunk."""
    qs = qs.order_by(*order)
    if after is None:
        return qs
    (first, second), op = _fields(order)
    later = Q(**{f"{first}__{op}": after[0]}) | Q(**{first: after[0], f"{second}__{op}": after[1]})
    return qs.filter(later, **{f"{first}__{op}e": after[0]})  # the second filter: the index range, for the planner


def _fields(order: tuple[str, str]) -> tuple[tuple[str, str], str]:
    descending = {name.startswith("-") for name in order}
    if len(descending) != 1:
        raise ValueError(f"keyset order: both fields ascending or both descending, got {order!r}")
    return (order[0].lstrip("-"), order[1].lstrip("-")), "lt" if descending.pop() else "gt"


def keyset_chunks(qs: QuerySet, *, order: tuple[str, str] = ("created_at", "id"), chunk: int = 200) -> Iterator[list]:
    """The rows of ``qs`` in ``order`` (two non-null fields, the second
    unique), ``chunk`` rows per query. Rows are model instances (with
    ``qs``'s prefetches done per chunk) or, for a ``values()`` queryset, dicts
    holding both fields. A row written during the read is included when it
    sorts after the rows already read."""
    (first, second), _op = _fields(order)
    after = None
    while True:
        rows = list(keyset_page(qs, order=order, after=after)[:chunk])
        if rows:
            yield rows
        if len(rows) < chunk:
            return
        last = rows[-1]
        after = (last[first], last[second]) if isinstance(last, dict) else (getattr(last, first), getattr(last, second))
