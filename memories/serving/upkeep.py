"""What keeps retrieval fast and its counters true outside the request: the
web processes' warm-up and the fold of served counts from the log."""

from __future__ import annotations

import logging
import uuid
from datetime import datetime

from django.db import DatabaseError, transaction
from pgvector.django import CosineDistance

from memories.embedding.model import embed_text, load_now
from memories.items.models import ItemStatus, MemoryItem
from memories.serving.models import Arm, RetrievalEvent
from memories.serving.search import HNSW_EF_SEARCH, MAX_K, hnsw_ef_search, hnsw_scan

log = logging.getLogger(__name__)


WARM_UP_QUERY = "warm up the query embedding and the vector search"


def retrieval_warm_up() -> None:
    """Make this process's first retrieval cost what any other costs: load
    the embedding model, embed one query (torch's first call allocates and
    picks kernels), and run one vector search (opens the persistent database
    connection, loads the catalog and the HNSW index's upper pages). Web
    processes run it before they accept requests (wsgi.py). Never raises: a
    model that cannot load is reported by /readyz (and retrievals answer 503),
    a database that is down only leaves the search cold."""
    if not load_now():
        return
    vector = embed_text(WARM_UP_QUERY)
    try:
        any_items_search(vector=vector)
    except DatabaseError as exc:
        log.warning("retrieval warm-up: the vector search failed (%s); the first retrieval pays for it", exc)


COUNT_SERVED_BATCH = 5000


def memory_items_count_served(*, batch: int = COUNT_SERVED_BATCH) -> int:
    """Fold every retrieval not yet counted into its items' ``served_count``
    and ``last_served_at`` (treatment arm only: the holdout arm served
    nothing, and items left out by per-item randomisation), and return how
    many retrievals were folded. Exactly once:
    retrievals are claimed with ``FOR UPDATE SKIP LOCKED`` and marked in the
    same transaction, so concurrent folds split the work; items are locked in
    primary-key order, so folds never deadlock each other, and retrievals
    themselves lock no item row. Runs from beat every few seconds."""
    folded = 0
    while True:
        with transaction.atomic():
            events = list(
                RetrievalEvent.objects.select_for_update(skip_locked=True)
                .filter(served_counted=False)
                .order_by("pk")
                .values_list("pk", "arm", "results", "withheld", "created_at")[:batch]
            )
            if not events:
                return folded
            served: dict[str, tuple[int, datetime]] = {}
            for _pk, arm, results, withheld, created_at in events:
                if arm != Arm.TREATMENT:
                    continue
                for entry in results or []:
                    public_id = str(entry.get("id", "")) if isinstance(entry, dict) else ""
                    if public_id in (withheld or []):
                        continue  # left out by per-item randomisation: not served
                    count, last = served.get(public_id, (0, created_at))
                    served[public_id] = (count + 1, max(last, created_at))
            items = list(
                MemoryItem.objects.select_for_update()
                .filter(public_id__in=[p for p in served if _is_uuid(p)])
                .order_by("pk")
                .only("pk", "public_id", "served_count", "last_served_at")
            )
            for item in items:
                count, last = served[str(item.public_id)]
                item.served_count += count
                item.last_served_at = max(item.last_served_at, last) if item.last_served_at else last
            MemoryItem.objects.bulk_update(items, ["served_count", "last_served_at"])
            RetrievalEvent.objects.filter(pk__in=[pk for pk, *_ in events]).update(served_counted=True)
            folded += len(events)
        if len(events) < batch:
            return folded


def _is_uuid(value: str) -> bool:
    try:
        uuid.UUID(value)
    except ValueError:
        return False
    return True


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
