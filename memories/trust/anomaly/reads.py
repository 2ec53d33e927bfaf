"""What people read of the anomaly score: the bank's calibration on the Trust
page (its reference, threshold and measured false-flag rate) and an item's
score beside its findings."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from accounts.models import Bank
from memories.items.models import MemoryItem
from memories.trust.anomaly.calibration import MIN_REFERENCE, reference_items, share_above, threshold_at
from memories.trust.anomaly.models import AnomalyCalibration
from memories.trust.risk_models import RiskFinding
from memories.trust.rules.findings import Kind
from memories.trust.selectors import bank_trust_policy


@dataclass(frozen=True)
class AnomalyStatus:
    """The bank's anomaly score as its Trust page shows it."""

    rate: float  # the policy's false-flag rate (0: off)
    approved: int  # approved items embedded now (the next calibration's reference)
    minimum: int  # MIN_REFERENCE
    reference_size: int  # approved items the stored calibration was computed on (0: none yet)
    threshold: float | None  # at ``rate``; None: off or not calibrated
    measured_rate: float | None  # share of the reference's leave-one-out scores above the threshold
    computed_at: datetime | None

    @property
    def calibrated(self) -> bool:
        return self.threshold is not None

    @property
    def rate_text(self) -> str:
        return percent_text(self.rate)

    @property
    def measured_text(self) -> str:
        return "" if self.measured_rate is None else percent_text(self.measured_rate)


def percent_text(share: float) -> str:
    """0.02 as "2 %", 0.025 as "2.5 %"."""
    return f"{round(share * 100, 1):g} %"


def bank_anomaly_status(*, bank: Bank) -> AnomalyStatus:
    """The policy's rate, the stored calibration read at that rate (the threshold and the share of the
    reference above it), and how many approved items the bank has now."""
    rate = bank_trust_policy(bank=bank).anomaly_false_flag_rate
    calibration = AnomalyCalibration.objects.filter(bank=bank).first()
    scores = calibration.scores if calibration is not None else []
    threshold = threshold_at(scores, rate)
    return AnomalyStatus(
        rate=rate,
        approved=reference_items(bank.pk).count(),
        minimum=MIN_REFERENCE,
        reference_size=calibration.reference_size if calibration is not None else 0,
        threshold=threshold,
        measured_rate=share_above(scores, threshold),
        computed_at=calibration.computed_at if calibration is not None else None,
    )


def item_anomaly(*, item: MemoryItem) -> dict | None:
    """The item's latest anomaly finding as its page shows it: ``score``, the bank's ``threshold`` now and
    its rate (``rate_text``), whether a reviewer ``confirmed`` it; None when it has none."""
    finding = RiskFinding.objects.filter(item=item, kind=Kind.ANOMALY, score__isnull=False).order_by("-id").first()
    if finding is None:
        return None
    status = bank_anomaly_status(bank=item.bank)
    return {
        "score": finding.score,
        "threshold": status.threshold,
        "rate_text": status.rate_text,
        "confirmed": finding.confirmed,
    }
