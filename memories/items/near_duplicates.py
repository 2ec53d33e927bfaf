"""The near-duplicate search behind proposals: a bank's proposed or approved
items nearest to a new lesson's embedding, or its refused items (a refused
lesson's repeats, and the look-alikes reviewers are shown)."""

from __future__ import annotations

from functools import lru_cache

import numpy as np
from django.db import connection, transaction
from pgvector.django import CosineDistance

from accounts.models import Bank
from memories.items.models import ItemStatus, MemoryItem
from memories.learning.selectors import refused_q
from memories.serving.search import HNSW_EF_SEARCH, hnsw_iterative_scan, hnsw_scan

# Near-duplicate suggestions: cosine similarity at or above which an item is suggested, and how many.
NEAR_DUPLICATE_SIMILARITY = 0.85
NEAR_DUPLICATE_LIMIT = 3


def near_duplicates_search(
    *,
    bank: Bank,
    vector,
    exclude_pk: int | None = None,
    statuses=(ItemStatus.PROPOSED, ItemStatus.APPROVED),
    refused: bool = False,
    min_similarity: float = NEAR_DUPLICATE_SIMILARITY,
) -> list[dict]:
    """The up-to-NEAR_DUPLICATE_LIMIT proposed or approved items (or those in
    ``statuses``) of ``bank`` nearest to ``vector`` with cosine similarity ≥
    ``min_similarity`` (NEAR_DUPLICATE_SIMILARITY), most similar first, as
    ``{"id", "title", "similarity"}`` dicts (the shape stored in
    ``MemoryItem.near_duplicates``). ``refused``: among the rejected and
    archived-as-wrong items instead of ``statuses``."""
    qs = MemoryItem.objects.filter(bank=bank, embedding__isnull=False)
    qs = qs.filter(refused_q()) if refused else qs.filter(status__in=list(statuses))
    if exclude_pk is not None:
        qs = qs.exclude(pk=exclude_pk)
    rows = (
        qs.annotate(distance=CosineDistance("embedding", vector))
        .only("public_id", "title")
        .order_by("distance")[:NEAR_DUPLICATE_LIMIT]
    )
    with hnsw_scan(ef_search=HNSW_EF_SEARCH):
        rows = sorted(rows, key=lambda r: r.distance)
    return [
        {"id": str(r.public_id), "title": r.title, "similarity": round(1.0 - float(r.distance), 4)}
        for r in rows
        if 1.0 - float(r.distance) >= min_similarity
    ]


_NEAR_DUPLICATES_MANY_SQL = """
SELECT q.n, m.public_id, m.title, m.distance
FROM unnest(%(vectors)s::vector[]) WITH ORDINALITY AS q(v, n)
CROSS JOIN LATERAL (
    SELECT i.public_id, i.title, i.embedding <=> q.v AS distance
    FROM {table} i
    WHERE i.bank_id = %(bank)s AND ({statuses}) AND i.embedding IS NOT NULL
    ORDER BY i.embedding <=> q.v
    LIMIT %(limit)s
) m
ORDER BY q.n, m.distance
"""


def vector_literal(vector) -> str:
    """``vector`` as pgvector's text literal. A float32 array (the model's) is
    written with 9 significant digits, enough for each element to parse back
    (pgvector reads them with ``strtof``) to the very same float32, for a
    third of the time of the shortest repr of each as a double."""
    if isinstance(vector, np.ndarray) and vector.dtype == np.float32 and vector.ndim == 1:
        return "[" + _float32_format(len(vector)) % tuple(vector.tolist()) + "]"
    return "[" + ",".join(repr(float(x)) for x in vector) + "]"


@lru_cache(maxsize=4)
def _float32_format(n: int) -> str:
    return ",".join(["%.9g"] * n)


# Which items a lesson is compared with: those it may duplicate, or those a reviewer refused
# (rejected, or archived as wrong: refused_q), whose repeats are never queued as new.
_LIVE_STATUSES = "i.status = ANY(%(statuses)s)"
_REFUSED_STATUSES = "i.status = 'rejected' OR (i.status = 'archived' AND i.archived_as_wrong)"


def near_duplicates_search_many(
    *, bank: Bank, vectors, refused: bool = False, min_similarity: float = NEAR_DUPLICATE_SIMILARITY
) -> list[list[dict]]:
    """``near_duplicates_search`` for several vectors in one query (one
    nearest-neighbour scan per vector, joined laterally): one list per vector,
    in order. ``refused``: among the rejected and archived-as-wrong items
    instead; ``min_similarity`` replaces NEAR_DUPLICATE_SIMILARITY."""
    if not len(vectors):
        return []
    literals = [vector_literal(vector) for vector in vectors]
    found: list[list[dict]] = [[] for _ in literals]
    # No savepoint inside a caller's transaction (an error leaves it anyway): the settings then hold until its end.
    with transaction.atomic(savepoint=False):
        hnsw_iterative_scan(ef_search=HNSW_EF_SEARCH)
        with connection.cursor() as cursor:
            cursor.execute(
                _NEAR_DUPLICATES_MANY_SQL.format(
                    table=MemoryItem._meta.db_table, statuses=_REFUSED_STATUSES if refused else _LIVE_STATUSES
                ),
                {
                    "vectors": literals,
                    "bank": bank.pk,
                    "statuses": [ItemStatus.PROPOSED.value, ItemStatus.APPROVED.value],
                    "limit": NEAR_DUPLICATE_LIMIT,
                },
            )
            rows = cursor.fetchall()
    for n, public_id, title, distance in rows:
        similarity = 1.0 - float(distance)
        if similarity >= min_similarity:
            found[n - 1].append({"id": str(public_id), "title": title, "similarity": round(similarity, 4)})
    return found
