"""OpenTelemetry spans kept until their trace becomes a trajectory (trajectories.otlp)."""

from django.db import models

from accounts.models import ApiToken, Bank


class TraceSpan(models.Model):
    """One span of an OpenTelemetry trace that has not become a trajectory yet
    (trajectories.otlp decodes and maps it). Keyed by (bank, trace_id, span_id),
    so a re-exported span is stored once; the rows of a trace are deleted when
    it becomes a trajectory (its root span ended, or it was idle too long)."""

    bank = models.ForeignKey(Bank, on_delete=models.CASCADE, related_name="+")
    token = models.ForeignKey(ApiToken, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    trace_id = models.CharField(max_length=32)  # lowercase hex, as OTLP/JSON writes it
    span_id = models.CharField(max_length=16)
    parent_span_id = models.CharField(max_length=16, blank=True)
    start_ns = models.BigIntegerField(default=0)
    # The decoded span (name, times, attributes, resource, status, events); see trajectories.otlp.
    span = models.JSONField(default=dict)
    received_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        indexes = [models.Index(fields=["received_at"])]
        constraints = [
            models.UniqueConstraint(fields=["bank", "trace_id", "span_id"], name="tracespan_unique_bank_trace_span"),
        ]

    def __str__(self) -> str:
        return f"{self.trace_id}/{self.span_id}"
