"""The anomaly detector (``anomaly-1``): a new or edited item that scores above
its bank's calibrated threshold gets a finding of kind ``anomaly`` (excerpt:
the item's title, so the item page highlights it; the score stored on the
finding). Like every finding, it keeps the item from being served until a
reviewer approves it, confirming."""

from __future__ import annotations

from collections.abc import Sequence
from types import SimpleNamespace

from django.core.cache import cache
from django.db.models import Count, Subquery
from django.db.models.expressions import RawSQL
from django.db.models.functions import Coalesce

from memories.embedding.items import item_embedding_is_current
from memories.embedding.model import embed_text, item_embedding_text
from memories.items.models import ItemStatus, MemoryItem
from memories.trust.anomaly.calibration import (
    calibration_is_stale,
    item_anomaly_score,
    reference_items,
)
from memories.trust.anomaly.models import AnomalyCalibration
from memories.trust.risk_models import RiskFinding
from memories.trust.rules.findings import Kind
from memories.trust.selectors import bank_trust_policy
from reasoningbank_site.celery import enqueue_on_commit

ANOMALY_DETECTOR = "anomaly-1"
# A stale bank is sent to a worker at most once in this many seconds (beat catches any lost request).
CALIBRATE_ASK_INTERVAL = 600
ANOMALY_REASON = "Unlike the bank's approved items: not served until a reviewer approves it, confirming."


def bank_anomaly_threshold(bank) -> float | None:
    """The bank's threshold at its policy's false-flag rate (None: off, or not calibrated). Asks a worker
    to recalibrate when the approved set changed enough (calibration_is_stale); never calibrates here.
    One query reads the calibration's threshold (the one stored score at the rate's quantile, not the whole
    list: calibration.threshold_at in SQL) and the reference's size beside it."""
    rate = bank_trust_policy(bank=bank).anomaly_false_flag_rate
    if rate <= 0:
        return None
    approved = Subquery(reference_items(bank.pk).order_by().values("bank_id").annotate(n=Count("pk")).values("n"))
    row = (
        AnomalyCalibration.objects.filter(bank=bank)
        .annotate(
            approved=Coalesce(approved, 0),
            # np.quantile(scores, 1 - rate, method="higher") of the sorted scores (1-based in SQL).
            at=RawSQL("scores[ceil((cardinality(scores) - 1) * %s)::int + 1]", (1.0 - rate,)),
        )
        .values("reference_size", "computed_at", "approved", "at")
        .first()
    )
    calibration = SimpleNamespace(**row) if row else None
    size = row["approved"] if row else reference_items(bank.pk).count()
    if calibration_is_stale(calibration, size) and cache.add(
        f"rb:anomaly-calibrate:{bank.pk}", 1, timeout=CALIBRATE_ASK_INTERVAL
    ):
        enqueue_on_commit("memories.anomaly_calibrate", bank.pk)
    return float(row["at"]) if row and row["at"] is not None else None


def _vector(item: MemoryItem):
    if item_embedding_is_current(item):
        return item.embedding
    # An edit clears the embedding until a worker refreshes it: score the new text now all the same.
    return embed_text(item_embedding_text(title=item.title, description=item.description, content=item.content))


def memory_items_anomaly_scan(*, items: Sequence[MemoryItem]) -> list[RiskFinding]:
    """Score the new proposals among ``items`` (those memory_items_risk_scan scans: saved, not a lesson the
    bank already held) against their bank and record an ``anomaly`` finding on each above the threshold. An
    approved item so flagged is sent to review (not served until a reviewer approves it, confirming)."""
    fresh = [i for i in items if i.pk is not None and getattr(i, "supported_by", None) is None]
    rows = []
    for bank_id in dict.fromkeys(i.bank_id for i in fresh):
        of_bank = [i for i in fresh if i.bank_id == bank_id]
        threshold = bank_anomaly_threshold(of_bank[0].bank)
        if threshold is None:
            continue
        for item in of_bank:
            score = item_anomaly_score(bank_id=bank_id, vector=_vector(item), exclude_pk=item.pk)
            if score is not None and score > threshold:
                rows.append(
                    RiskFinding(
                        item=item, kind=Kind.ANOMALY, excerpt=item.title, detector=ANOMALY_DETECTOR, score=score
                    )
                )
    if not rows:
        return []
    RiskFinding.objects.filter(item__in=[r.item for r in rows], kind=Kind.ANOMALY).delete()
    rows = RiskFinding.objects.bulk_create(rows)
    approved = [r.item for r in rows if r.item.status == ItemStatus.APPROVED]
    if approved:
        MemoryItem.objects.filter(pk__in=[i.pk for i in approved]).update(needs_review_reason=ANOMALY_REASON)
        for item in approved:
            item.needs_review_reason = ANOMALY_REASON
    return rows


def memory_item_anomaly_rescan(*, item: MemoryItem) -> list[RiskFinding]:
    """Score an item written by hand or edited (its own text, not the bank's other items) against its
    bank: memory_items_anomaly_scan for one item."""
    return memory_items_anomaly_scan(items=[item])
