"""Task sets, evaluation runs, their arms and every try.

A run is planned in full when it is created: one ``EvalAttempt`` row per task, arm and try,
``pending`` until a harness claims it, ``claimed`` while the team's agent works on it (a claim
older than the lease is offered again, so an abandoned run resumes where it stopped), and
``recorded`` once the trajectory came back. A try's outcome is its task's check when the task has
one (``success_check``), else the verdict of its trajectory (the agent's own signal, the LLM judge or a reviewer)."""

import uuid

from django.conf import settings
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models
from django.db.models import Q

from accounts.models import ApiToken, Bank
from memories.releases.models import Release

TASK_SET_NAME_MAX = 120
TASK_KEY_MAX = 200
TRIES_MIN, TRIES_MAX = 1, 20


class TaskSetSource(models.TextChoices):
    TRAJECTORIES = "trajectories", "Built from past trajectories"
    UPLOAD = "upload", "Uploaded as JSONL"


class TaskSet(models.Model):
    """A named, fixed list of evaluation tasks of one bank."""

    public_id = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    bank = models.ForeignKey(Bank, on_delete=models.CASCADE, related_name="task_sets")
    name = models.CharField(max_length=TASK_SET_NAME_MAX)
    description = models.TextField(blank=True)
    source = models.CharField(max_length=16, choices=TaskSetSource.choices)
    # The trajectory filter it was built from ({} for an upload), shown on its page.
    filters = models.JSONField(default=dict, blank=True)
    task_count = models.PositiveIntegerField(default=0)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at"]
        constraints = [models.UniqueConstraint(fields=["bank", "name"], name="taskset_unique_name")]

    def __str__(self) -> str:
        return self.name


class EvalTask(models.Model):
    """One task of a set. ``success_check`` (optional) decides success from the final answer without a judge:
    {"type": "contains" | "equals" | "regex", "value": "...", "ignore_case": bool}. ``task_id`` is the
    task id whose lessons are left out of this task's retrievals (leave-one-task-out)."""

    task_set = models.ForeignKey(TaskSet, on_delete=models.CASCADE, related_name="tasks")
    key = models.CharField(max_length=TASK_KEY_MAX)  # the task's id in the set, as the user wrote it
    text = models.TextField()
    metadata = models.JSONField(default=dict, blank=True)
    success_check = models.JSONField(null=True, blank=True)
    task_id = models.CharField(max_length=TASK_KEY_MAX, blank=True)
    trajectory = models.ForeignKey(
        "trajectories.Trajectory", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )  # the past trajectory it was taken from
    position = models.PositiveIntegerField(default=0)

    class Meta:
        ordering = ["position", "id"]
        constraints = [models.UniqueConstraint(fields=["task_set", "key"], name="evaltask_unique_key")]

    def __str__(self) -> str:
        return self.key


class ArmKind(models.TextChoices):
    CANDIDATE = "candidate", "Candidate release"
    PRODUCTION = "production", "Production"
    NO_MEMORY = "none", "No memory"
    CONTROL = "control", "Same-budget control"


class RunState(models.TextChoices):
    OPEN = "open", "Open: tries are being recorded"
    FINISHED = "finished", "Finished"
    CANCELLED = "cancelled", "Cancelled"


class EvalRun(models.Model):
    """One comparison of arms on one task set, ``k`` tries per task and arm."""

    public_id = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    bank = models.ForeignKey(Bank, on_delete=models.CASCADE, related_name="evaluation_runs")
    task_set = models.ForeignKey(TaskSet, on_delete=models.PROTECT, related_name="runs")
    note = models.CharField(max_length=500, blank=True)
    k = models.PositiveSmallIntegerField(validators=[MinValueValidator(TRIES_MIN), MaxValueValidator(TRIES_MAX)])
    state = models.CharField(max_length=16, choices=RunState.choices, default=RunState.OPEN)
    # Every arm's token budget per try (null: none set); the control gets it plus the memory block's tokens.
    token_budget = models.PositiveIntegerField(null=True, blank=True)
    tries_total = models.PositiveIntegerField(default=0)
    tries_recorded = models.PositiveIntegerField(default=0)
    # The statistics and verdicts once every outcome is known (trajectories.evaluation computes them).
    results = models.JSONField(default=dict, blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    token = models.ForeignKey(ApiToken, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    last_activity_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        indexes = [models.Index(fields=["bank", "created_at"], name="evalrun_bank_created")]

    def __str__(self) -> str:
        return f"evaluation {self.public_id}"


class EvalArm(models.Model):
    """An arm of a run. ``release`` is pinned when the run is created: the candidate's release, or the
    release production served then; null for the no-memory arm and the control."""

    run = models.ForeignKey(EvalRun, on_delete=models.CASCADE, related_name="arms")
    kind = models.CharField(max_length=16, choices=ArmKind.choices)
    release = models.ForeignKey(Release, null=True, blank=True, on_delete=models.PROTECT, related_name="+")
    position = models.PositiveSmallIntegerField(default=0)

    class Meta:
        ordering = ["position", "id"]
        constraints = [models.UniqueConstraint(fields=["run", "kind"], name="evalarm_one_per_kind")]

    def __str__(self) -> str:
        return self.kind


class AttemptState(models.TextChoices):
    PENDING = "pending", "Not started"
    CLAIMED = "claimed", "Being run"
    RECORDED = "recorded", "Recorded"


class EvalAttempt(models.Model):
    """One try (``number`` 1..k) of one task in one arm."""

    public_id = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    run = models.ForeignKey(EvalRun, on_delete=models.CASCADE, related_name="attempts")
    arm = models.ForeignKey(EvalArm, on_delete=models.CASCADE, related_name="attempts")
    task = models.ForeignKey(EvalTask, on_delete=models.CASCADE, related_name="attempts")
    number = models.PositiveSmallIntegerField()
    state = models.CharField(max_length=16, choices=AttemptState.choices, default=AttemptState.PENDING)
    claimed_at = models.DateTimeField(null=True, blank=True)
    # What the arm served for it: [{"id": "<item uuid>", "score": 0.8}], and the memory block's tokens
    # (the control: the block it was not given, whose tokens it got as extra budget).
    served = models.JSONField(default=list, blank=True)
    memory_tokens = models.PositiveIntegerField(default=0)
    extra_tokens = models.PositiveIntegerField(default=0)
    trajectory = models.ForeignKey(
        "trajectories.Trajectory", null=True, blank=True, on_delete=models.SET_NULL, related_name="evaluation_tries"
    )
    check_passed = models.BooleanField(null=True, blank=True)  # the task's check on the answer; null: no check
    steps = models.PositiveIntegerField(null=True, blank=True)
    prompt_tokens = models.PositiveIntegerField(null=True, blank=True)
    completion_tokens = models.PositiveIntegerField(null=True, blank=True)
    recorded_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["id"]
        indexes = [models.Index(fields=["run", "state"], name="evalattempt_run_state")]
        constraints = [
            models.UniqueConstraint(fields=["arm", "task", "number"], name="evalattempt_unique_try"),
            models.CheckConstraint(condition=Q(number__gte=1), name="evalattempt_number_positive"),
        ]

    def __str__(self) -> str:
        return f"{self.arm_id}/{self.task_id}#{self.number}"
