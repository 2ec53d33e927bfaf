"""A bank's own prompts, and experiments that compare a judge with the humans."""

import uuid

from django.conf import settings
from django.db import models
from django.db.models import Q

from accounts.models import Bank


class PromptName(models.TextChoices):
    JUDGE = "judge", "Judge"
    DISTILL_SUCCESS = "distill_success", "Distill a success"
    DISTILL_FAILURE = "distill_failure", "Distill a failure"
    MATTS_PARALLEL = "matts_parallel", "MaTTS contrast (parallel rollouts)"
    MATTS_SEQUENTIAL = "matts_sequential", "MaTTS refinement (sequential)"


class PromptVersion(models.Model):
    """A bank's own wording of one prompt. Append-only: an edit is a new row
    with the next number. At most one version per (bank, name) is active;
    none active means the default file (trajectories/prompts/)."""

    public_id = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    bank = models.ForeignKey(Bank, on_delete=models.CASCADE, related_name="prompt_versions")
    name = models.CharField(max_length=24, choices=PromptName.choices)
    number = models.PositiveIntegerField()
    text = models.TextField()
    note = models.CharField(max_length=200, blank=True)
    is_active = models.BooleanField(default=False)
    author = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name", "-number"]
        constraints = [
            models.UniqueConstraint(fields=["bank", "name", "number"], name="promptversion_unique_number"),
            models.UniqueConstraint(
                fields=["bank", "name"], condition=Q(is_active=True), name="promptversion_one_active"
            ),
        ]

    def __str__(self) -> str:
        return self.version

    @property
    def version(self) -> str:
        """What Judgment.prompt_version / MemoryItem.prompt_version record."""
        return f"{self.name}@bank-{self.bank_id}-v{self.number}"


class ExperimentStatus(models.TextChoices):
    QUEUED = "queued", "Queued"
    RUNNING = "running", "Running"
    DONE = "done", "Done"
    FAILED = "failed", "Failed"


class Experiment(models.Model):
    """A candidate judge (prompt version, model, few-shot setting) and the
    bank's current one, both run over the held-out human-labelled
    trajectories. ``cases`` holds each case's answers, keyed by trajectory
    pk, so a task run twice (a retry, a redelivery) never judges a case twice."""

    public_id = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    bank = models.ForeignKey(Bank, on_delete=models.CASCADE, related_name="experiments")
    # A prompt of None is the default file; a model of "" the service default (RB_LLM_MODEL).
    candidate_prompt = models.ForeignKey(
        PromptVersion, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    candidate_model = models.CharField(max_length=120, blank=True)
    candidate_few_shot = models.BooleanField(default=False)
    baseline_prompt = models.ForeignKey(
        PromptVersion, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    baseline_model = models.CharField(max_length=120, blank=True)
    baseline_few_shot = models.BooleanField(default=False)

    status = models.CharField(max_length=12, choices=ExperimentStatus.choices, default=ExperimentStatus.QUEUED)
    total = models.PositiveIntegerField(default=0)
    done = models.PositiveIntegerField(default=0)
    cases = models.JSONField(default=dict, blank=True)
    error = models.TextField(blank=True)

    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    promoted_at = models.DateTimeField(null=True, blank=True)
    promoted_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["bank", "created_at"])]

    def __str__(self) -> str:
        return f"experiment {self.public_id} ({self.status})"
