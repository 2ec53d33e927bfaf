"""The anomaly score and its per-bank calibration.

An item's score is 1 − the mean cosine similarity of its embedding to its
K nearest approved items of the same bank (0: just like them, up to 2:
opposite). The bank's threshold is the (1 − rate) quantile of the
leave-one-out scores of its approved items, each scored against the others,
so that about ``rate`` of the bank's own approved items (at most that share)
would be flagged: the false-flag rate is a setting of the trust policy
(``anomaly_false_flag_rate``). The scores are computed by a worker
(``bank_anomaly_calibrate``) and cached on AnomalyCalibration; a request only
reads them."""

from __future__ import annotations

from datetime import timedelta

import numpy as np
from django.db.models import Count, Q
from django.utils import timezone
from pgvector.django import CosineDistance

from accounts.models import Bank
from memories.embedding.model import embedding_model_name
from memories.items.models import ItemStatus, MemoryItem
from memories.serving.search import HNSW_EF_SEARCH, hnsw_scan
from memories.trust.anomaly.models import AnomalyCalibration
from memories.trust.selectors import bank_trust_policy

# Neighbours an item is compared with.
K = 5
# Below this many approved items there is no calibration, hence no anomaly finding.
MIN_REFERENCE = 20
# The reference is the bank's most recently approved items, at most this many.
MAX_REFERENCE = 5000
# Recalibrate when the approved set grew or shrank by more than this share, or the scores are this old.
RECALIBRATE_CHANGE = 0.10
RECALIBRATE_AGE = timedelta(days=1)
_CHUNK = 512


def reference_items(bank_id: int):
    """The bank's approved items embedded by the configured model: what a new item is compared with."""
    return MemoryItem.objects.filter(
        bank_id=bank_id, status=ItemStatus.APPROVED, embedding__isnull=False, embedding_model=embedding_model_name()
    )


def leave_one_out_scores(vectors: np.ndarray, k: int = K) -> np.ndarray:
    """Each row's score against the other rows (1 − the mean cosine similarity of its ``k`` nearest),
    in chunks so memory stays at _CHUNK × n similarities."""
    n = len(vectors)
    if n <= k:
        return np.zeros(0)
    unit = vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)
    out = np.empty(n)
    for start in range(0, n, _CHUNK):
        sims = unit[start : start + _CHUNK] @ unit.T
        rows = np.arange(len(sims))
        sims[rows, start + rows] = -np.inf  # not its own neighbour
        nearest = np.partition(sims, n - k, axis=1)[:, n - k :]
        out[start : start + len(sims)] = 1.0 - nearest.mean(axis=1)
    return out


def threshold_at(scores, rate: float) -> float | None:
    """The (1 − ``rate``) quantile of ``scores`` (the next score up, so that at most ``rate`` of them lie
    above it); None when ``rate`` is 0 (off) or there are no scores."""
    if rate <= 0 or not len(scores):
        return None
    return float(np.quantile(np.asarray(scores, dtype=float), 1.0 - rate, method="higher"))


def share_above(scores, threshold: float | None) -> float | None:
    """The share of ``scores`` above ``threshold``: the calibration's actual false-flag rate on its reference."""
    if threshold is None or not len(scores):
        return None
    return float(np.mean(np.asarray(scores, dtype=float) > threshold))


def bank_anomaly_calibrate(*, bank: Bank) -> AnomalyCalibration:
    """Score each of the bank's approved items (at most MAX_REFERENCE, the most recently approved) against
    the others and store the scores with the threshold at the policy's false-flag rate. Below MIN_REFERENCE
    items the stored calibration has no threshold (no anomaly finding)."""
    rate = bank_trust_policy(bank=bank).anomaly_false_flag_rate
    vectors = list(
        reference_items(bank.pk).order_by("-approved_at", "-pk").values_list("embedding", flat=True)[:MAX_REFERENCE]
    )
    scores: list[float] = []
    if len(vectors) >= MIN_REFERENCE:
        scores = sorted(round(float(s), 6) for s in leave_one_out_scores(np.asarray(vectors, dtype=np.float32)))
    calibration, _ = AnomalyCalibration.objects.update_or_create(
        bank=bank,
        defaults={
            "reference_size": len(vectors),
            "scores": scores,
            "threshold": threshold_at(scores, rate),
            "false_flag_rate": rate,
            "computed_at": timezone.now(),
        },
    )
    return calibration


def calibration_is_stale(calibration: AnomalyCalibration | None, approved: int) -> bool:
    """Whether a bank with ``approved`` reference items needs recalibrating: never calibrated, the set changed
    by more than RECALIBRATE_CHANGE (or crossed MIN_REFERENCE), or the scores are older than RECALIBRATE_AGE."""
    approved = min(approved, MAX_REFERENCE)
    if calibration is None:
        return approved >= MIN_REFERENCE
    before = calibration.reference_size
    if (before >= MIN_REFERENCE) != (approved >= MIN_REFERENCE):
        return True
    if approved < MIN_REFERENCE:
        return False
    return abs(approved - before) > RECALIBRATE_CHANGE * before or (
        timezone.now() - calibration.computed_at > RECALIBRATE_AGE
    )


def banks_anomaly_recalibrate() -> int:
    """Beat: recalibrate every bank whose calibration is stale (calibration_is_stale), skipping banks whose
    policy turned the score off. Returns how many banks were recalibrated."""
    counts = dict(
        MemoryItem.objects.filter(
            status=ItemStatus.APPROVED, embedding__isnull=False, embedding_model=embedding_model_name()
        )
        .values_list("bank_id")
        .annotate(n=Count("*"))
        .order_by()
    )
    calibrations = {c.bank_id: c for c in AnomalyCalibration.objects.defer("scores")}
    off = set(
        Bank.objects.filter(trust_policy__anomaly_false_flag_rate__lte=0).values_list("pk", flat=True)
    )  # a bank without a policy has the default rate: on
    done = 0
    for bank in Bank.objects.filter(Q(pk__in=list(counts)) | Q(pk__in=list(calibrations))).exclude(pk__in=off):
        if calibration_is_stale(calibrations.get(bank.pk), counts.get(bank.pk, 0)):
            bank_anomaly_calibrate(bank=bank)
            done += 1
    return done


def item_anomaly_score(*, bank_id: int, vector, exclude_pk: int | None = None) -> float | None:
    """1 − the mean cosine similarity of ``vector`` to its K nearest reference items of the bank (one
    nearest-neighbour query; the item itself left out); None when the bank has fewer than K."""
    qs = reference_items(bank_id)
    if exclude_pk is not None:
        qs = qs.exclude(pk=exclude_pk)
    rows = qs.annotate(distance=CosineDistance("embedding", vector)).only("pk").order_by("distance")[:K]
    with hnsw_scan(ef_search=HNSW_EF_SEARCH):
        distances = [float(r.distance) for r in rows]
    if len(distances) < K:
        return None
    return float(np.mean(distances))  # cosine distance is 1 − similarity


def bank_anomaly_calibrate_by_id(*, bank_id: int) -> bool:
    """bank_anomaly_calibrate for the task that a stale calibration enqueues (False: the bank is gone)."""
    bank = Bank.objects.filter(pk=bank_id).first()
    if bank is None:
        return False
    bank_anomaly_calibrate(bank=bank)
    return True
