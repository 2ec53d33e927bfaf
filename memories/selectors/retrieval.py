"""What agents are served: vector search over approved items and experiences,
the near-duplicate search behind proposals, the agent-facing lists of approved
items, and the system block served with a retrieval."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

import numpy as np
from django.db import connection, transaction
from django.db.models import BooleanField, Count, Exists, IntegerField, OuterRef, Q, QuerySet
from django.db.models.expressions import RawSQL
from pgvector import Vector
from pgvector.django import CosineDistance

from accounts.models import MAX_TOP_K, Bank
from memories.embeddings import embedding_model_name, item_embedding_hash
from memories.models import Experience, ItemStatus, MemoryItem
from reasoningbank_site.db import constants_inlined, instances_fetched

MAX_K = MAX_TOP_K
# Candidate list of the HNSW scan; at least a few times k so relaxed-order
# iterative scans return the true neighbours (bench/retrieval_recall.py measures
# recall and cost per value). Recall at a given value varies from one index build
# to the next: at 100k items, 200 gave 0.988 on one build and 0.964 on another, 400
# gave 0.990, 0.984 and 0.978 on three builds, and 600 gave 0.996 on the build where
# 400 gave 0.978 (+1.6 ms a search: 9.6 against 8.0). Under a filter the scan keeps
# going until k items pass it (iterative scan), and the 1% tag filter measured 1.000 at 200.
HNSW_EF_SEARCH = 600
HNSW_EF_SEARCH_FILTERED = 200
SYSTEM_BLOCK_VERSION = "system_block_v1"
_PROMPTS = Path(__file__).resolve().parent.parent / "prompts"
# Near-duplicate suggestions: cosine similarity at or above which an item is suggested, and how many.
NEAR_DUPLICATE_SIMILARITY = 0.85
NEAR_DUPLICATE_LIMIT = 3


@dataclass(frozen=True)
class EmbeddingCounts:
    has_approved: bool
    pending: int  # approved but without a current embedding: not searchable yet


@dataclass(frozen=True)
class RetrievalFilters:
    """What a retrieval may serve, beyond the bank and status: items carrying
    any of ``tags_any`` and all of ``tags_all``, learnt from a trajectory of
    one of ``agents``, whose source trajectories' metadata includes
    ``metadata`` (JSON containment: every key with that value, nested objects
    matched partially). Empty parts do not filter. Items written by hand or
    imported have no source agent or metadata, so those filters leave them out."""

    tags_any: tuple[str, ...] = ()
    tags_all: tuple[str, ...] = ()
    agents: tuple[str, ...] = ()
    metadata: dict = field(default_factory=dict)

    def __bool__(self) -> bool:
        return bool(self.tags_any or self.tags_all or self.agents or self.metadata)

    def q(self, prefix: str = "") -> Q:
        """The filters as a Q on MemoryItem (``prefix`` for a related item, e.g. "items__");
        every lookup has a GIN index, and all of them run inside the vector search."""
        q = Q()
        if self.tags_any:
            q &= Q(**{f"{prefix}tags__overlap": list(self.tags_any)})
        if self.tags_all:
            q &= Q(**{f"{prefix}tags__contains": list(self.tags_all)})
        if self.agents:
            q &= Q(**{f"{prefix}source_agents__overlap": list(self.agents)})
        if self.metadata:
            # source_metadata is a list of objects: [{...}] is contained when one of them contains {...}.
            q &= Q(**{f"{prefix}source_metadata__contains": [self.metadata]})
        return q

    def as_dict(self) -> dict:
        """The filters in the API's shape (recorded on the RetrievalEvent); {} when none."""
        out: dict = {}
        tags = {key: list(values) for key, values in (("any", self.tags_any), ("all", self.tags_all)) if values}
        if tags:
            out["tags"] = tags
        if self.agents:
            out["agent"] = {"in": list(self.agents)}
        if self.metadata:
            out["metadata"] = self.metadata
        return out


NO_FILTERS = RetrievalFilters()


def hnsw_iterative_scan(*, ef_search: int) -> None:
    """Inside the current transaction: let the HNSW scan keep going until the
    bank/status filter leaves enough rows (pgvector ≥ 0.8), instead of
    returning fewer rows when other banks crowd the first candidate list;
    and no JIT compilation for these short index scans (its cost estimate
    can cross ``jit_above_cost`` on a large table, and compiling takes longer
    than the scan). One round trip."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT set_config('hnsw.iterative_scan', 'relaxed_order', true), set_config('hnsw.ef_search', %s, true),"
            " set_config('jit', 'off', true)",
            [str(int(ef_search))],
        )


def hnsw_session_settings(sender, connection, **kwargs) -> None:
    """``connection_created`` receiver (memories.apps): give every new
    database connection the scan settings of hnsw_iterative_scan with
    ef_search HNSW_EF_SEARCH as its session defaults, once, so a search with
    those settings needs neither a transaction nor a set_config round trip
    (hnsw_scan). Records which raw connection got them: a connection replaced
    later (health check, database restart) runs this again, and one that did
    not is never trusted."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT set_config('hnsw.iterative_scan', 'relaxed_order', false),"
            " set_config('hnsw.ef_search', %s, false), set_config('jit', 'off', false)",
            [str(HNSW_EF_SEARCH)],
        )
    connection.hnsw_session = connection.connection


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


def _current_embedding_q(prefix: str = "") -> Q:
    return (
        Q(**{f"{prefix}embedding__isnull": False})
        & Q(**{f"{prefix}embedding_model": embedding_model_name()})
        & ~Q(**{f"{prefix}embedding_hash": ""})
    )


# What is read of an item a search finds: the answer (the API's, the playground's), the system block, the
# retrieval's log, and _scored's check that the embedding is current. The rest of the row is left in the
# database (deferred): parsing 20 rows' dates, JSON and arrays cost about a millisecond per retrieval.
SERVED_FIELDS = ("public_id", "title", "description", "content", "origin", "approved_at", "tags", "embedding_hash")


def _approved_items_qs(
    *, bank: Bank, vector, k: int, exclude_task_id: str, filters: RetrievalFilters, with_embedding: bool = False
) -> QuerySet:
    qs = MemoryItem.objects.filter(_current_embedding_q(), filters.q(), bank=bank, status=ItemStatus.APPROVED)
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
    """_SIMILARITIES_SQL around ``sql``, ``qs``'s statement: its columns but the
    embedding, and its annotations."""
    names, deferred = qs.query.deferred_loading
    fields = [
        f.column
        for f in MemoryItem._meta.concrete_fields
        if f.column != "embedding" and (f.primary_key or (f.name not in names if deferred else f.name in names))
    ]
    return _SIMILARITIES_SQL.format(
        inner=sql,
        columns=", ".join(f'c."{name}"' for name in [*fields, *qs.query.annotations]),
        order_b=", ".join(f'b."{name}"' for name in order),
        order_c=", ".join(f'c."{name}"' for name in order),
    )


def _distinct(
    pairs: list[tuple[MemoryItem, float]], *, threshold: float | None, k: int | None = None
) -> list[tuple[MemoryItem, float]]:
    """``pairs`` (best first) without any item whose cosine similarity to a
    better one kept is ≥ ``threshold`` (the bank's duplicate threshold), then
    at most ``k``: the same lesson is served once, and the next candidates
    fill its place. Reads the similarities _with_similarities fetched with the
    candidates, no query; an item without an embedding is kept."""
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


def hnsw_ef_search(*, k: int, filters: RetrievalFilters = NO_FILTERS) -> int:
    """The HNSW candidate list for a search of ``k`` items: HNSW_EF_SEARCH, or
    HNSW_EF_SEARCH_FILTERED when ``filters`` narrow it, and at least 4·k."""
    return max(HNSW_EF_SEARCH_FILTERED if filters else HNSW_EF_SEARCH, 4 * k)


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
) -> tuple[list[tuple[MemoryItem, float]], EmbeddingCounts]:
    """approved_items_search and embedding_counts in one query (what a
    retrieval needs): the two counts ride along as uncorrelated subqueries,
    which PostgreSQL runs once (InitPlans) beside the index scan. Falls back
    to embedding_counts when the search found no row to carry them. With a
    ``duplicate_threshold``, 2·k candidates are fetched with their mutual
    similarities (still one query) and no two items at or above it are
    returned (``_distinct``: the better one stays, the next candidates fill up
    to k)."""
    k = max(1, min(int(k), MAX_K))
    fetch = 2 * k if duplicate_threshold is not None else k
    if filters:
        has_approved, pending = _counts_expressions(bank=bank)
        qs = _approved_items_qs(
            bank=bank,
            vector=vector,
            k=fetch,
            exclude_task_id=exclude_task_id,
            filters=filters,
            with_embedding=duplicate_threshold is not None,
        )
        qs = qs.annotate(bank_has_approved=has_approved, bank_pending=pending)
        with hnsw_scan(ef_search=hnsw_ef_search(k=fetch, filters=filters)):
            rows = list(qs) if duplicate_threshold is None else _with_similarities(qs, order=SEARCH_ORDER)
    else:
        sql, params = _prepared_search_sql(
            bank.pk, embedding_model_name(), fetch, duplicate_threshold is not None, bool(exclude_task_id)
        )
        # The vector as _vector_literal writes it: the same float32 values as the ORM's text, a third of the Python.
        params = [_vector_literal(vector) if p is _VECTOR else exclude_task_id for p in params]
        with hnsw_scan(ef_search=hnsw_ef_search(k=fetch)):
            rows = instances_fetched(MemoryItem, sql, params, server_binding=True, prepared=True)
        for position, row in enumerate(rows):
            row.position = position
    if not rows:
        return [], embedding_counts(bank=bank)
    counts = EmbeddingCounts(has_approved=rows[0].bank_has_approved, pending=rows[0].bank_pending)
    return _distinct(_scored(rows, min_similarity), threshold=duplicate_threshold, k=k), counts


SEARCH_ORDER = ("distance", "id")
# Placeholders for the per-call parameters of a compiled search (_counted_search_sql).
_VECTOR, _TASK = object(), object()
_SENTINEL_TASK = "\x01exclude_task_id\x01"


def _vector_text(vector) -> str:
    """The query vector as the text parameter CosineDistance passes (pgvector's own literal)."""
    return vector.to_text() if isinstance(vector, Vector) else Vector(vector).to_text()


def _counted_search_sql(
    bank_id: int, model: str, fetch: int, with_similarities: bool, excludes_task: bool
) -> tuple[str, tuple]:
    """approved_items_search_counted's query without filters, as the ORM builds
    it (compiled once per bank, model, size and shape by _prepared_search_sql's
    cache: building and compiling it through the ORM cost ~1–2 ms of Python per
    retrieval, issue 14): its SQL (with the candidates' similarities when
    ``with_similarities``, as _with_similarities runs it) and its parameters,
    where _VECTOR and _TASK stand for the query vector's text and the excluded
    task id (``model`` is part of the key: the SQL names the configured model).
    The same SQL and parameters the ORM builds."""
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
    ).annotate(bank_has_approved=has_approved, bank_pending=pending)
    sql, params = qs.query.sql_with_params()
    if with_similarities:
        sql = _similarities_sql(qs, sql, order=SEARCH_ORDER)
    zero_text = _vector_text(zero)
    marked = tuple(_VECTOR if p == zero_text else _TASK if p == _SENTINEL_TASK else p for p in params)
    assert marked.count(_VECTOR) == 1 and marked.count(_TASK) == int(excludes_task), sql
    return sql, marked


@lru_cache(maxsize=1024)
def _prepared_search_sql(
    bank_id: int, model: str, fetch: int, with_similarities: bool, excludes_task: bool
) -> tuple[str, tuple]:
    """_counted_search_sql's statement as a retrieval runs it, compiled once per
    bank, model, size and shape, and prepared on its connection
    (server_bound_cursor): the bank, status and model written into
    its text, only the query vector and the excluded task id left as
    parameters (_VECTOR, _TASK). PostgreSQL may keep one generic plan for a
    prepared statement; with the bank in the text, that plan is this bank's
    (a small bank among large ones is searched another way than a large one),
    and the vector does not change which plan is cheapest."""
    sql, marked = _counted_search_sql(bank_id, model, fetch, with_similarities, excludes_task)
    return constants_inlined(sql, marked, kept=lambda p: p is _VECTOR or p is _TASK)


def any_items_search(*, vector) -> list[int]:
    """The pks of the approved items of any bank nearest to ``vector``, by the
    production index scan: what the web processes' warm-up runs, so the first
    real search finds the connection, catalog and index pages warm."""
    rows = (
        MemoryItem.objects.filter(status=ItemStatus.APPROVED, embedding__isnull=False)
        .annotate(distance=CosineDistance("embedding", vector))
        .order_by("distance")
        .values_list("pk", flat=True)[:MAX_K]
    )
    with hnsw_scan(ef_search=hnsw_ef_search(k=MAX_K)):
        return list(rows)


def experiences_search(
    *,
    bank: Bank,
    vector,
    n: int,
    min_similarity: float,
    exclude_task_id: str = "",
    filters: RetrievalFilters = NO_FILTERS,
    duplicate_threshold: float | None = None,
) -> list[tuple[MemoryItem, float]]:
    """The paper's retrieval: the ``n`` past tasks (experiences) of the bank
    most similar to ``vector`` that have at least one approved item matching
    ``filters``, then those items of those experiences, each scored with its
    experience's similarity. Experiences (and items) of ``exclude_task_id``
    are left out. The filters sit inside the experience search's EXISTS, so
    the index scan continues past experiences with no matching item. With a
    ``duplicate_threshold``, an item at or above it to one served before it
    is left out (``_distinct``)."""
    n = max(1, min(int(n), MAX_K))
    approved_items = MemoryItem.objects.filter(filters.q(), experience=OuterRef("pk"), status=ItemStatus.APPROVED)
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
    items = MemoryItem.objects.filter(filters.q(), experience_id__in=scores, status=ItemStatus.APPROVED)
    if exclude_task_id:
        items = items.exclude(source_task_id=exclude_task_id)
    if duplicate_threshold is None:
        rows = list(items.defer("embedding").order_by("created_at", "id"))
    else:
        rows = _with_similarities(items.order_by("created_at", "id"), order=("created_at", "id"))
    results = [(item, scores[item.experience_id]) for item in rows]
    results.sort(key=lambda pair: -pair[1])  # stable: an experience's items keep their order
    return _distinct(results, threshold=duplicate_threshold)


def near_duplicates_search(
    *, bank: Bank, vector, exclude_pk: int | None = None, statuses=(ItemStatus.PROPOSED, ItemStatus.APPROVED)
) -> list[dict]:
    """The up-to-NEAR_DUPLICATE_LIMIT proposed or approved items (or those in
    ``statuses``) of ``bank`` nearest to ``vector`` with cosine similarity ≥
    NEAR_DUPLICATE_SIMILARITY, most similar first, as ``{"id", "title",
    "similarity"}`` dicts (the shape stored in ``MemoryItem.near_duplicates``)."""
    qs = MemoryItem.objects.filter(bank=bank, status__in=list(statuses), embedding__isnull=False)
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
        if 1.0 - float(r.distance) >= NEAR_DUPLICATE_SIMILARITY
    ]


_NEAR_DUPLICATES_MANY_SQL = """
SELECT q.n, m.public_id, m.title, m.distance
FROM unnest(%(vectors)s::vector[]) WITH ORDINALITY AS q(v, n)
CROSS JOIN LATERAL (
    SELECT i.public_id, i.title, i.embedding <=> q.v AS distance
    FROM {table} i
    WHERE i.bank_id = %(bank)s AND i.status = ANY(%(statuses)s) AND i.embedding IS NOT NULL
    ORDER BY i.embedding <=> q.v
    LIMIT %(limit)s
) m
ORDER BY q.n, m.distance
"""


def _vector_literal(vector) -> str:
    """``vector`` as pgvector's text literal. A float32 array (the model's) is
    written with 9 significant digits, enough for each element to parse back
    (pgvector reads them with ``strtof``) to the very same float32, for a
    third of the time of the shortest repr of each as a double (issue 14)."""
    if isinstance(vector, np.ndarray) and vector.dtype == np.float32 and vector.ndim == 1:
        return "[" + _float32_format(len(vector)) % tuple(vector.tolist()) + "]"
    return "[" + ",".join(repr(float(x)) for x in vector) + "]"


@lru_cache(maxsize=4)
def _float32_format(n: int) -> str:
    return ",".join(["%.9g"] * n)


def near_duplicates_search_many(*, bank: Bank, vectors) -> list[list[dict]]:
    """``near_duplicates_search`` for several vectors in one query (one
    nearest-neighbour scan per vector, joined laterally): one list per vector,
    in order."""
    if not len(vectors):
        return []
    literals = [_vector_literal(vector) for vector in vectors]
    found: list[list[dict]] = [[] for _ in literals]
    # No savepoint inside a caller's transaction (an error leaves it anyway): the settings then hold until its end.
    with transaction.atomic(savepoint=False):
        hnsw_iterative_scan(ef_search=HNSW_EF_SEARCH)
        with connection.cursor() as cursor:
            cursor.execute(
                _NEAR_DUPLICATES_MANY_SQL.format(table=MemoryItem._meta.db_table),
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
        if similarity >= NEAR_DUPLICATE_SIMILARITY:
            found[n - 1].append({"id": str(public_id), "title": title, "similarity": round(similarity, 4)})
    return found


def _counts_expressions(*, bank: Bank):
    """(has approved items, approved items without a current embedding) of
    ``bank`` as uncorrelated SQL expressions. One index range each on the
    (bank, status, embedding_model) index: the services keep embedding, hash
    and model empty together, so a model other than the configured one is
    exactly "no current embedding"."""
    (has_sql, has_params), (pending_sql, pending_params) = _counts_sql(bank.pk, embedding_model_name())
    return (
        RawSQL(has_sql, has_params, output_field=BooleanField()),
        RawSQL(pending_sql, pending_params, output_field=IntegerField()),
    )


@lru_cache(maxsize=1024)
def _counts_sql(bank_id: int, model: str) -> tuple[tuple[str, tuple], tuple[str, tuple]]:
    """_counts_expressions' two subqueries as SQL, compiled once per bank and
    model: building and compiling them on every retrieval cost more Python
    than the vector search's own query (issue 14)."""
    approved = MemoryItem.objects.filter(bank_id=bank_id, status=ItemStatus.APPROVED)
    pending = approved.filter(Q(embedding_model__lt=model) | Q(embedding_model__gt=model) | Q(embedding_hash=""))
    has_sql, has_params = approved.values("pk")[:1].query.sql_with_params()
    pending_sql, pending_params = (
        pending.order_by().values("bank").annotate(n=Count("id")).values("n")[:1].query.sql_with_params()
    )
    return (f"EXISTS({has_sql})", tuple(has_params)), (f"COALESCE(({pending_sql}), 0)", tuple(pending_params))


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


@lru_cache(maxsize=4)
def system_block_preamble(version: str = SYSTEM_BLOCK_VERSION) -> str:
    return (_PROMPTS / f"{version}.txt").read_text(encoding="utf-8").strip()


def system_block_render(items: list[MemoryItem], *, version: str = SYSTEM_BLOCK_VERSION) -> str:
    """The text an agent puts in its system prompt: the preamble, then each
    item as ``## title`` / description / content. Empty when no items."""
    if not items:
        return ""
    parts = [system_block_preamble(version)]
    for item in items:
        parts.append(f"## {item.title.strip()}\n{item.description.strip()}\n{item.content.strip()}")
    return "\n\n".join(parts)


def approved_items_list(*, bank: Bank) -> QuerySet[MemoryItem]:
    """The bank's approved items, newest approval first (what agents may see)."""
    return (
        MemoryItem.objects.filter(bank=bank, status=ItemStatus.APPROVED)
        .defer("embedding")
        .order_by("-approved_at", "-id")
    )


def approved_item_get(*, bank: Bank, public_id) -> MemoryItem:
    """One approved item of ``bank`` by public id. Raises MemoryItem.DoesNotExist
    for an unknown id, another bank's item, or one not approved."""
    return approved_items_list(bank=bank).get(public_id=public_id)
