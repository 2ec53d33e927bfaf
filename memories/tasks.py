"""Celery adapters for memories: take ids, call one service. Task functions
end in ``_task`` so they never shadow the services they call; the registered
names (``memories.embed_item``, ``memories.embed_pending``, ``memories.release_import``) are the stable
contract with the broker and beat."""

from celery import shared_task
from celery.signals import worker_process_init
from django.conf import settings

from memories.embedding.items import memory_item_embed_refresh, memory_items_embed_pending
from memories.embedding.model import preload
from memories.releases.imports import release_import_run
from memories.serving.rollups import retrieval_tallies_roll_up
from memories.serving.tallies import retrieval_tallies_compact
from memories.serving.upkeep import memory_items_count_served
from memories.trust.anomaly.calibration import bank_anomaly_calibrate_by_id, banks_anomaly_recalibrate
from reasoningbank_site.celery import db_outage_retry


@worker_process_init.connect
def _load_embedding_model(**kwargs) -> None:
    """Each worker process starts loading the model at once (in the background:
    Celery gives a child 4 s to come up), so its first task does not pay for it."""
    if settings.RB_EMBEDDING_PRELOAD:
        preload()


@shared_task(name="memories.embed_item", ignore_result=True, acks_late=True, **db_outage_retry())
def memory_item_embed_task(item_id: int) -> bool:
    """(Re-)embed one memory item. Idempotent: the service skips an item whose
    embedding already matches its text and model."""
    return memory_item_embed_refresh(item_id=item_id)


@shared_task(name="memories.embed_pending", ignore_result=True, acks_late=True)
def memory_items_embed_sweep_task(limit: int = 200) -> int:
    """Periodic sweeper (beat): embed items whose embedding was lost or is stale."""
    return memory_items_embed_pending(limit=limit)


@shared_task(name="memories.count_served", ignore_result=True, acks_late=True)
def memory_items_count_served_task() -> int:
    """Periodic (beat): fold logged retrievals into the items' served counters."""
    return memory_items_count_served()


@shared_task(name="memories.compact_tallies", ignore_result=True, acks_late=True)
def retrieval_tallies_compact_task() -> int:
    """Periodic (beat): merge the Impact report's appended sums, one row per key,
    then roll up the days older than ROLLUP_AFTER_DAYS by month."""
    return retrieval_tallies_compact() + retrieval_tallies_roll_up()


@shared_task(name="memories.release_import", ignore_result=True, acks_late=True, **db_outage_retry())
def release_import_task(import_id: int) -> str:
    """Write a release import the request checked and queued (idempotent: one that ended is left alone)."""
    return release_import_run(import_id=import_id)


@shared_task(name="memories.anomaly_calibrate", ignore_result=True, acks_late=True, **db_outage_retry())
def bank_anomaly_calibrate_task(bank_id: int) -> bool:
    """Recalibrate one bank's anomaly score (its approved set changed enough)."""
    return bank_anomaly_calibrate_by_id(bank_id=bank_id)


@shared_task(name="memories.anomaly_recalibrate", ignore_result=True, acks_late=True)
def banks_anomaly_recalibrate_task() -> int:
    """Periodic (beat): recalibrate the banks whose anomaly calibration is stale."""
    return banks_anomaly_recalibrate()
