"""A bank's anomaly calibration: the leave-one-out scores of its approved
items (each scored against the others) and the threshold they give at the
policy's false-flag rate. Computed by a worker, never per request."""

from django.contrib.postgres.fields import ArrayField
from django.db import models

from accounts.models import Bank


class AnomalyCalibration(models.Model):
    bank = models.OneToOneField(Bank, on_delete=models.CASCADE, related_name="anomaly_calibration")
    # How many approved (embedded) items the scores were computed on; below the minimum, no threshold.
    reference_size = models.PositiveIntegerField(default=0)
    # Each reference item's leave-one-out score, ascending (empty below the minimum reference size).
    scores = ArrayField(models.FloatField(), default=list, blank=True)
    # The threshold at ``false_flag_rate`` (the policy's when computed); null: not calibrated.
    threshold = models.FloatField(null=True, blank=True)
    false_flag_rate = models.FloatField(default=0.0)
    computed_at = models.DateTimeField()

    def __str__(self) -> str:
        return f"anomaly calibration of bank {self.bank_id}"
