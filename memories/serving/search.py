"""The vector search of a retrieval: a bank's served items (or its past tasks, the experiences) nearest to the
query, with the bank's embedding counts, and how the HNSW index is scanned for it."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import lru_cache

from django.db import connection, transaction
from django.db.models import Count, Exists, IntegerField, OuterRef, Q, QuerySet, Subquery
from django.db.models.functions import Coalesce
from pgvector import Vector
from pgvector.django import CosineDistance

from accounts.models import MAX_TOP_K, Bank
from memories.embedding.model import embedding_model_name, item_embedding_hash
from memories.items.experiences import Experience
from memories.items.models import ItemStatus, MemoryItem
from memories.serving import (
    NO_FILTERS,
    RetrievalFilters,
    latest_version_subquery,
    release_texts_apply,
    release_version_subquery,
    served_q,
)

MAX_K = MAX_TOP_K


@dataclass(frozen=True)
class EmbeddingCounts:
    has_approved: bool
    pending: int  # approved but without a current embedding: not searchable yet


def _current_embedding_q(prefix: str = "") -> Q:
    return (
        Q(**{f"{prefix}embedding__isnull": False})
        & Q(**{f"{prefix}embedding_model": embedding_model_name()})
        & ~Q(**{f"{prefix}embedding_hash": ""})
    )


# What is read of an item a search finds: the answer (the API's, the playground's), the system block, the
# retrieval's log, and _scored's check that the embedding is current. The rest of the row is left in the
# database (deferred): parsing 20 rows' dates, JSON and arrays cost about a millisecond per retrieval.
SERVED_FIELDS = (
    "public_id",
    "title",
    "description",
    "content",
    "origin",
    "approved_at",
    "tags",
    "embedding_hash",
    "outcome_effect",  # utility ranking's inputs (memories.serving.preview)
    "outcome_n",
)
SEARCH_ORDER = ("distance", "id")


def _approved_items_qs(
    *,
    bank: Bank,
    vector,
    k: int,
    exclude_task_id: str,
    filters: RetrievalFilters,
    with_embedding: bool = False,
    release: int | None = None,
) -> QuerySet:
    qs = MemoryItem.objects.filter(_current_embedding_q(), served_q(searched=release, filters=filters), bank=bank)
    if release is not None:  # release_texts_apply's inputs
        qs = qs.annotate(release_version=release_version_subquery(release), latest_version=latest_version_subquery())
    if exclude_task_id:
        qs = qs.exclude(source_task_id=exclude_task_id)
    qs = qs.annotate(distance=CosineDistance("embedding", vector))
    return qs.only(*SERVED_FIELDS, *(["embedding"] if with_embedding else [])).order_by("distance")[:k]


# pgvector stores vectors out of line (TOAST, storage EXTERNAL), and the CTE keeps a pointer to each:
# comparing every candidate with every other read each embedding back from TOAST 2·n times (6 ms of a
# 14 ms search at 100k, 20 candidates). ``vec`` is an exact in-memory copy (subvector of all its
# dimensions), read from TOAST once per candidate when the CTE is built.
_SIMILARITIES_SQL = (
    "WITH c AS MATERIALIZED (SELECT q.*, subvector(q.embedding, 1, vector_dims(q.embedding)) AS vec FROM ({inner}) q)"
    " SELECT {columns}, ARRAY(SELECT 1 - (c.vec <=> b.vec) FROM c b ORDER BY {order_b}) AS similarities"
    " FROM c ORDER BY {order_c}"
)


def _with_similarities(qs: QuerySet, *, order: tuple[str, ...]) -> list[MemoryItem]:
    """The rows of ``qs`` (which selects the embedding) in one query, each with
    ``similarities``: its cosine similarity to every row, in ``order``, computed
    by the database, and ``position``: its own index in that order. The
    embeddings themselves never leave the database (parsing them costs more
    than the search); the items come back with the embedding deferred."""
    sql, params = qs.query.sql_with_params()
    rows = list(MemoryItem.objects.raw(_similarities_sql(qs, sql, order=order), params))
    for position, row in enumerate(rows):
        row.position = position
    return rows


def _similarities_sql(qs: QuerySet, sql: str, *, order: tuple[str, ...]) -> str:
    """_SIMILARITIES_SQL around ``sql``, ``qs``'s statement (an
    _approved_items_qs): the columns it reads (the primary key and
    SERVED_FIELDS), and its annotations."""
    served = set(SERVED_FIELDS)
    fields = [f.column for f in MemoryItem._meta.concrete_fields if f.primary_key or f.name in served]
    return _SIMILARITIES_SQL.format(
        inner=sql,
        columns=", ".join(f'c."{name}"' for name in [*fields, *qs.query.annotations]),
        order_b=", ".join(f'b."{name}"' for name in order),
        order_c=", ".join(f'c."{name}"' for name in order),
    )


def _distinct(
    pairs: list[tuple[MemoryItem, float]], *, threshold: float | None, k: int | None = None
) -> list[tuple[MemoryItem, float]]:
    """``pairs`` (best first) without any item at cosine similarity ≥ ``threshold`` to a better one kept, then at
    most ``k``: a lesson is served once and the next candidates fill its place. No query (the similarities came
    with the candidates); an item without an embedding is kept."""
    if threshold is None:
        return pairs[:k] if k is not None else pairs
    kept: list[tuple[MemoryItem, float]] = []
    positions: list[int] = []
    for item, score in pairs:
        similarities = item.similarities
        if any(similarities[p] is not None and similarities[p] >= threshold for p in positions):
            continue
        kept.append((item, score))
        positions.append(item.position)
        if k is not None and len(kept) == k:
            break
    return kept


def _scored(rows: list[MemoryItem], min_similarity: float) -> list[tuple[MemoryItem, float]]:
    # Relaxed order may be slightly off: re-sort. The distance filter stays
    # outside the index scan (pgvector's advice), applied here on ≤ k rows.
    rows.sort(key=lambda item: item.distance)
    results = []
    for item in rows:
        score = 1.0 - float(item.distance)
        if score < min_similarity:
            continue
        if item.embedding_hash != item_embedding_hash(item):  # text changed behind the services' back
            continue
        results.append((item, round(score, 4)))
    return results


def approved_items_search(
    *,
    bank: Bank,
    vector,
    k: int,
    min_similarity: float,
    exclude_task_id: str = "",
    filters: RetrievalFilters = NO_FILTERS,
    ef_search: int | None = None,
) -> list[tuple[MemoryItem, float]]:
    """The bank's approved items with a current embedding nearest to
    ``vector`` (cosine), at most ``k``, best first, as (item, similarity)
    with similarity ≥ ``min_similarity``. Items whose ``source_task_id`` is
    ``exclude_task_id`` are left out (leave-one-task-out); ``filters`` are
    part of the same query, so the iterative index scan keeps going until k
    matching items are found (a selective filter is not starved).
    ``ef_search`` overrides hnsw_ef_search (the benchmarks sweep it)."""
    k = max(1, min(int(k), MAX_K))
    qs = _approved_items_qs(bank=bank, vector=vector, k=k, exclude_task_id=exclude_task_id, filters=filters)
    with hnsw_scan(ef_search=ef_search or hnsw_ef_search(k=k, filters=filters)):
        rows = list(qs)
    return _scored(rows, min_similarity)


def approved_items_search_counted(
    *,
    bank: Bank,
    vector,
    k: int,
    min_similarity: float,
    exclude_task_id: str = "",
    filters: RetrievalFilters = NO_FILTERS,
    duplicate_threshold: float | None = None,
    release: int | None = None,
) -> tuple[list[tuple[MemoryItem, float]], EmbeddingCounts]:
    """approved_items_search and embedding_counts in one query: the counts ride along as uncorrelated
    subqueries (InitPlans, run once), with embedding_counts as the fallback when no row carries them. With a
    ``duplicate_threshold``, 2·k candidates come with their mutual similarities (still one query) and no two
    at or above it are served (``_distinct``). With ``release``, that release's items are searched, each
    with its text as released (release_texts_apply)."""
    k = max(1, min(int(k), MAX_K))
    fetch = 2 * k if duplicate_threshold is not None else k
    with_similarities = duplicate_threshold is not None
    if filters:
        has_approved, pending = _counts_expressions(bank=bank)
        qs = _approved_items_qs(
            bank=bank,
            vector=vector,
            k=fetch,
            exclude_task_id=exclude_task_id,
            filters=filters,
            with_embedding=with_similarities,
            release=release,
        ).annotate(bank_has_approved=has_approved, bank_pending=pending)
        with hnsw_scan(ef_search=hnsw_ef_search(k=fetch, filters=filters)):
            rows = list(qs) if not with_similarities else _with_similarities(qs, order=SEARCH_ORDER)
    else:
        sql, marked = _counted_search_sql(
            bank.pk, embedding_model_name(), fetch, with_similarities, bool(exclude_task_id), release is not None
        )
        fill = {id(_VECTOR): _vector_text(vector), id(_TASK): exclude_task_id, id(_RELEASE): release}
        params = [fill.get(id(p), p) for p in marked]
        with hnsw_scan(ef_search=hnsw_ef_search(k=fetch)):
            rows = list(MemoryItem.objects.raw(sql, params))
        for position, row in enumerate(rows):
            row.position = position
    if not rows:
        return [], embedding_counts(bank=bank)
    counts = EmbeddingCounts(has_approved=rows[0].bank_has_approved, pending=rows[0].bank_pending)
    pairs = _distinct(_scored(rows, min_similarity), threshold=duplicate_threshold, k=k)
    if release is not None:
        release_texts_apply(pairs, number=release)
    return pairs, counts


# Stand-ins for the per-call parameters of the statement _counted_search_sql compiles once.
_VECTOR, _TASK, _RELEASE = object(), object(), object()
_SENTINEL_TASK = "\x01exclude_task_id\x01"
_SENTINEL_RELEASE = 987_654_321


def _vector_text(vector) -> str:
    """The query vector as the text parameter CosineDistance passes (pgvector's own literal)."""
    return vector.to_text() if isinstance(vector, Vector) else Vector(vector).to_text()


@lru_cache(maxsize=1024)
def _counted_search_sql(
    bank_id: int, model: str, fetch: int, with_similarities: bool, excludes_task: bool, by_release: bool = False
) -> tuple[str, tuple]:
    """approved_items_search_counted's ORM query without filters (with similarities when asked), compiled once
    per bank, model, size and shape: compiling it per retrieval cost ~2.6 ms of Python (bench/us_vs_floor.py).
    _VECTOR, _TASK and _RELEASE stand in its parameters for the vector, the excluded task id and the release;
    filled in, statement and parameters are the ORM's (tests/memories/test_retrieval.py)."""
    bank = Bank(pk=bank_id)
    has_approved, pending = _counts_expressions(bank=bank)
    zero = [0.0] * 2
    qs = _approved_items_qs(
        bank=bank,
        vector=zero,
        k=fetch,
        exclude_task_id=_SENTINEL_TASK if excludes_task else "",
        filters=NO_FILTERS,
        with_embedding=with_similarities,
        release=_SENTINEL_RELEASE if by_release else None,
    ).annotate(bank_has_approved=has_approved, bank_pending=pending)
    sql, params = qs.query.sql_with_params()
    if with_similarities:
        sql = _similarities_sql(qs, sql, order=SEARCH_ORDER)
    zero_text = _vector_text(zero)
    sentinels = {zero_text: _VECTOR, _SENTINEL_TASK: _TASK, _SENTINEL_RELEASE: _RELEASE}
    marked = tuple(sentinels.get(p, p) if isinstance(p, (str, int)) else p for p in params)
    assert marked.count(_VECTOR) == 1 and marked.count(_TASK) == int(excludes_task), sql
    assert (_RELEASE in marked) == by_release, sql
    return sql, marked


def experiences_search(
    *,
    bank: Bank,
    vector,
    n: int,
    min_similarity: float,
    exclude_task_id: str = "",
    filters: RetrievalFilters = NO_FILTERS,
    duplicate_threshold: float | None = None,
    release: int | None = None,
) -> list[tuple[MemoryItem, float]]:
    """The paper's retrieval: the ``n`` experiences (past tasks) nearest to ``vector`` with at least one served
    item matching ``filters`` (inside the EXISTS, so the scan goes on past the others), then their items, each
    scored with its experience's similarity; ``exclude_task_id``'s are left out. ``duplicate_threshold`` and
    ``release``: as approved_items_search_counted."""
    n = max(1, min(int(n), MAX_K))
    approved_items = MemoryItem.objects.filter(served_q(searched=release, filters=filters), experience=OuterRef("pk"))
    if exclude_task_id:
        approved_items = approved_items.exclude(source_task_id=exclude_task_id)
    qs = Experience.objects.filter(Exists(approved_items), bank=bank, embedding__isnull=False)
    if exclude_task_id:
        qs = qs.exclude(task_id=exclude_task_id)
    qs = qs.annotate(distance=CosineDistance("embedding", vector)).only("id").order_by("distance")[:n]
    with hnsw_scan(ef_search=max(HNSW_EF_SEARCH, 4 * n)):
        experiences = list(qs)
    scores = {e.pk: round(1.0 - float(e.distance), 4) for e in experiences}
    scores = {pk: s for pk, s in scores.items() if s >= min_similarity}
    if not scores:
        return []
    items = MemoryItem.objects.filter(served_q(searched=release, filters=filters), experience_id__in=scores)
    if release is not None:
        items = items.annotate(
            release_version=release_version_subquery(release), latest_version=latest_version_subquery()
        )
    if exclude_task_id:
        items = items.exclude(source_task_id=exclude_task_id)
    if duplicate_threshold is None:
        rows = list(items.defer("embedding").order_by("created_at", "id"))
    else:
        rows = _with_similarities(items.order_by("created_at", "id"), order=("created_at", "id"))
    results = [(item, scores[item.experience_id]) for item in rows]
    results.sort(key=lambda pair: -pair[1])  # stable: an experience's items keep their order
    results = _distinct(results, threshold=duplicate_threshold)
    if release is not None:
        release_texts_apply(results, number=release)
    return results


def _counts_expressions(*, bank: Bank) -> tuple[Exists, Coalesce]:
    """(has approved items, approved items without a current embedding) of ``bank`` as uncorrelated subqueries,
    one range each of the (bank, status, embedding_model) index: another model, written as < or > so the index
    answers it, is exactly "no current embedding" (the services keep embedding, hash and model empty together)."""
    model = embedding_model_name()
    approved = MemoryItem.objects.filter(bank_id=bank.pk, status=ItemStatus.APPROVED)
    pending = approved.filter(Q(embedding_model__lt=model) | Q(embedding_model__gt=model) | Q(embedding_hash=""))
    pending_count = pending.order_by().values("bank").annotate(n=Count("id")).values("n")[:1]
    return (
        Exists(approved.values("pk")[:1]),
        Coalesce(Subquery(pending_count, output_field=IntegerField()), 0),
    )


def embedding_counts(*, bank: Bank) -> EmbeddingCounts:
    """Whether the bank has approved items, and how many of them are not
    searchable yet (never embedded, edited since, or embedded by another
    model). One query."""
    has_approved, pending = _counts_expressions(bank=bank)
    row = (
        Bank.objects.filter(pk=bank.pk)
        .annotate(has_approved=has_approved, pending=pending)
        .values("has_approved", "pending")
        .first()
    ) or {"has_approved": False, "pending": 0}
    return EmbeddingCounts(has_approved=row["has_approved"], pending=row["pending"])


# Candidate list of the HNSW scan, a few times k so relaxed-order iterative scans return the true neighbours.
# Recall varies from one index build to the next: at 100k items 400 gave 0.978–0.990, 600 gave 0.996 (+1.6 ms a
# search); under a filter the scan goes on until k items pass, and the 1% tag filter measured 1.000 at 200
# (bench/retrieval_recall.py).
HNSW_EF_SEARCH = 600
HNSW_EF_SEARCH_FILTERED = 200


def hnsw_iterative_scan(*, ef_search: int) -> None:
    """Inside the current transaction, in one round trip: the HNSW scan goes on until the filters leave enough
    rows (pgvector ≥ 0.8) instead of returning fewer when other banks crowd the candidate list, and no JIT
    (compiling takes longer than these short scans)."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT set_config('hnsw.iterative_scan', 'relaxed_order', true), set_config('hnsw.ef_search', %s, true),"
            " set_config('jit', 'off', true)",
            [str(int(ef_search))],
        )


@contextmanager
def hnsw_scan(*, ef_search: int) -> Iterator[None]:
    """Run the vector searches inside with hnsw_iterative_scan's settings.
    Outside a transaction, on a connection that got them as session defaults
    (hnsw_session_settings) and with that ef_search, as is: one statement, no
    BEGIN/set_config/COMMIT round trips. Otherwise (another ef_search, or
    inside a transaction, whose SET LOCALs may differ) in a transaction that
    sets them locally."""
    connection.ensure_connection()
    if (
        ef_search == HNSW_EF_SEARCH
        and not connection.in_atomic_block
        and getattr(connection, "hnsw_session", None) is connection.connection
    ):
        yield
        return
    with transaction.atomic():
        hnsw_iterative_scan(ef_search=ef_search)
        yield


def hnsw_ef_search(*, k: int, filters: RetrievalFilters = NO_FILTERS) -> int:
    """The HNSW candidate list for a search of ``k`` items: HNSW_EF_SEARCH, or
    HNSW_EF_SEARCH_FILTERED when ``filters`` narrow it, and at least 4·k."""
    return max(HNSW_EF_SEARCH_FILTERED if filters else HNSW_EF_SEARCH, 4 * k)
