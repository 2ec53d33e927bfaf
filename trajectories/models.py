"""What agents did: trajectories (normalized steps), and the judgments made of
them — many per trajectory, never overwritten."""

import uuid

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils import timezone

from accounts.models import ApiToken, Bank
from memories.items.experiences import Experience
from memories.items.models import MemoryItem
from memories.serving.models import RetrievalEvent
from memories.trust.models import VerdictTier
from reasoningbank_site.search import SearchColumn


class Status(models.TextChoices):
    RECEIVED = "received", "Received"
    AWAITING_LLM = "awaiting_llm", "Waiting for an LLM endpoint"
    JUDGING = "judging", "Judging"
    JUDGED = "judged", "Judged"
    DISTILLING = "distilling", "Distilling"
    WAITING_GROUP = "waiting_group", "Waiting for the rest of its MaTTS group"
    DONE = "done", "Done"
    NEEDS_ATTENTION = "needs_attention", "Needs attention"


class Label(models.TextChoices):
    SUCCESS = "success", "Success"
    FAILURE = "failure", "Failure"


class InputFormat(models.TextChoices):
    STEPS = "steps", "Native steps"
    OPENAI = "openai", "OpenAI chat messages"
    ANTHROPIC = "anthropic", "Anthropic messages"
    OPENAI_RESPONSES = "openai_responses", "OpenAI Responses items"
    LANGCHAIN = "langchain", "LangChain messages"
    OTLP = "otlp", "OpenTelemetry trace (OTLP)"


def trajectory_search_vector() -> SearchColumn:
    """What the trajectory list's text search matches: the stored column
    ``to_tsvector('simple', task || ' ' || final_answer || ' ' || task_id)``
    with its GIN index ``trajectory_search_gin`` (migration 0010;
    reasoningbank_site/search.py)."""
    return SearchColumn("search_vector")


class Trajectory(models.Model):
    public_id = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    bank = models.ForeignKey(Bank, on_delete=models.CASCADE, related_name="trajectories")
    token = models.ForeignKey(ApiToken, null=True, blank=True, on_delete=models.SET_NULL, related_name="trajectories")
    task = models.TextField()
    task_id = models.CharField(max_length=200, blank=True, db_index=True)
    # Normalized steps; see trajectories.ingest for the shape of one step.
    steps = models.JSONField(default=list)
    step_count = models.PositiveIntegerField(default=0)
    input_format = models.CharField(max_length=16, choices=InputFormat.choices, default=InputFormat.STEPS)
    final_answer = models.TextField(blank=True)
    agent = models.CharField(max_length=200, blank=True)
    metadata = models.JSONField(default=dict, blank=True)

    # The agent's own outcome signal, as sent.
    outcome = models.CharField(max_length=16, choices=Label.choices, blank=True)
    reward = models.FloatField(null=True, blank=True)

    # NULL, not "": the unique constraint below applies only to trajectories that sent one.
    external_id = models.CharField(max_length=200, null=True, blank=True)  # noqa: DJ001
    retrieval = models.ForeignKey(
        RetrievalEvent, null=True, blank=True, on_delete=models.SET_NULL, related_name="trajectories"
    )
    group_id = models.CharField(max_length=200, blank=True, db_index=True)
    group_size = models.PositiveSmallIntegerField(null=True, blank=True)
    experience = models.ForeignKey(
        Experience, null=True, blank=True, on_delete=models.SET_NULL, related_name="trajectories"
    )

    status = models.CharField(max_length=20, choices=Status.choices, default=Status.RECEIVED)
    status_detail = models.TextField(blank=True, help_text="Why it needs attention, or what it waits for.")
    # The effective verdict (latest human, else trusted agent signal, else LLM), kept in step by services.
    verdict = models.CharField(max_length=16, choices=Label.choices, blank=True)
    # Where that verdict came from (human, the LLM judge, or the agent's own report: the lowest), kept with it.
    verdict_tier = models.PositiveSmallIntegerField(choices=VerdictTier.choices, default=VerdictTier.NONE)
    # Set when the bank's retention purged the raw record (steps, final answer); the rest stays.
    steps_purged_at = models.DateTimeField(null=True, blank=True)
    steps_purged_days = models.PositiveIntegerField(null=True, blank=True)  # the retention then in force

    # The row is the queue entry (trajectories.pipeline.dispatch): when a task for it was last handed to the
    # broker. Set in the INSERT (ingest enqueues every new row); NULL when that publish failed, or
    # nothing is queued for it (awaiting_llm), so the dispatcher and the sweeper know what to send.
    enqueued_at = models.DateTimeField(null=True, blank=True, default=timezone.now)
    # When its next transient-error retry is due (Retry-After honoured); the sweeper waits for it.
    retry_at = models.DateTimeField(null=True, blank=True)
    # The database backend (pg_backend_pid) of the worker that last moved it into judging or distilling
    # (trajectories.pipeline.held): once that backend is gone, so is the worker.
    taken_by = models.IntegerField(null=True, blank=True, editable=False)
    # Transient LLM failures per stage since the stage last (re)started: each stage has its own budget.
    judge_attempts = models.PositiveSmallIntegerField(default=0)
    distill_attempts = models.PositiveSmallIntegerField(default=0)
    contrast_attempts = models.PositiveSmallIntegerField(default=0)

    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        indexes = [
            # Covering: the queue's and the list's agent dropdown (memories.selectors.review_agents) reads the
            # agents of a bank's latest 5,000 trajectories from the index alone (an Index Only Scan, no heap rows).
            models.Index(fields=["bank", "created_at"], include=["agent"], name="trajectory_bank_created_agent"),
            models.Index(fields=["bank", "status"]),
            models.Index(fields=["status", "updated_at"]),
            # The dispatcher's every-few-seconds query: rows whose publish failed (empty when all is well).
            models.Index(
                fields=["created_at"],
                condition=Q(enqueued_at__isnull=True, status__in=["received", "judged"]),
                name="trajectory_unqueued",
            ),
        ]
        constraints = [
            models.UniqueConstraint(
                fields=["bank", "external_id"],
                condition=Q(external_id__isnull=False),
                name="trajectory_unique_bank_external_id",
            ),
        ]

    def __str__(self) -> str:
        return self.task[:80]


class JudgmentSource(models.TextChoices):
    AGENT = "agent", "Agent's own signal"
    LLM = "llm", "LLM judge"
    HUMAN = "human", "Human reviewer"


class Judgment(models.Model):
    public_id = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    trajectory = models.ForeignKey(Trajectory, on_delete=models.CASCADE, related_name="judgments")
    source = models.CharField(max_length=8, choices=JudgmentSource.choices)
    label = models.CharField(max_length=16, choices=Label.choices)
    rationale = models.TextField(blank=True)
    model = models.CharField(max_length=120, blank=True)
    prompt_version = models.CharField(max_length=60, blank=True)
    author = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["created_at", "id"]
        indexes = [models.Index(fields=["trajectory", "created_at"])]
        constraints = [
            # An LLM judgment is keyed by trajectory and prompt version, so a
            # task delivered twice cannot judge twice.
            models.UniqueConstraint(
                fields=["trajectory", "prompt_version"],
                condition=Q(source="llm"),
                name="judgment_unique_llm_per_prompt",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.get_source_display()}: {self.label}"


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


# ---------------------------------------------------------------------------
# A bank's own prompts, and experiments that compare a judge with the humans
# ---------------------------------------------------------------------------


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


# The longest comment a reviewer may write (characters).
COMMENT_MAX = 2000


class Comment(models.Model):
    """A reviewer's note on a memory item or on a trajectory (exactly one of
    the two). It lives here, in the app that sees both, and goes with its
    item or trajectory when that is deleted."""

    public_id = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    bank = models.ForeignKey(Bank, on_delete=models.CASCADE, related_name="+")
    item = models.ForeignKey(MemoryItem, null=True, blank=True, on_delete=models.CASCADE, related_name="+")
    trajectory = models.ForeignKey(Trajectory, null=True, blank=True, on_delete=models.CASCADE, related_name="comments")
    author = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    body = models.TextField(max_length=COMMENT_MAX)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["created_at", "id"]
        indexes = [
            models.Index(fields=["item", "created_at"]),
            models.Index(fields=["trajectory", "created_at"]),
        ]
        constraints = [
            models.CheckConstraint(
                condition=Q(item__isnull=False, trajectory__isnull=True)
                | Q(item__isnull=True, trajectory__isnull=False),
                name="comment_on_item_or_trajectory",
            ),
        ]

    def __str__(self) -> str:
        return f"comment by {self.author_id} on {'item' if self.item_id else 'trajectory'}"


# The longest model name counted (longer ones are cut).
LLM_MODEL_NAME_MAX = 200


class LLMStage(models.TextChoices):
    """Why the LLM was asked: the stage its tokens are counted under."""

    JUDGE = "judge", "Judge"
    DISTILL = "distill", "Distillation"
    MATTS = "matts", "MaTTS"
    EXPERIMENT = "experiment", "Judge experiments"


class LLMUsage(models.Model):
    """The tokens a bank's LLM calls used, summed per UTC day, stage and model
    (trajectories.pipeline.llm_usage adds to it; it outlives the trajectories)."""

    bank = models.ForeignKey(Bank, on_delete=models.CASCADE, related_name="+")
    day = models.DateField()
    stage = models.CharField(max_length=20, choices=LLMStage.choices)
    model = models.CharField(max_length=LLM_MODEL_NAME_MAX)
    calls = models.BigIntegerField(default=0)
    prompt_tokens = models.BigIntegerField(default=0)
    completion_tokens = models.BigIntegerField(default=0)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["bank", "day", "stage", "model"], name="llm_usage_unique_bank_day")
        ]

    def __str__(self) -> str:
        return f"{self.stage} {self.model} on {self.day}: {self.prompt_tokens}+{self.completion_tokens} tokens"


class TrajectoryLLMUsage(models.Model):
    """The tokens the LLM calls about one trajectory used, per stage and model.
    A MaTTS contrast call is about its whole group: each member carries it whole."""

    trajectory = models.ForeignKey(Trajectory, on_delete=models.CASCADE, related_name="llm_usage")
    stage = models.CharField(max_length=20, choices=LLMStage.choices)
    model = models.CharField(max_length=LLM_MODEL_NAME_MAX)
    calls = models.BigIntegerField(default=0)
    prompt_tokens = models.BigIntegerField(default=0)
    completion_tokens = models.BigIntegerField(default=0)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["trajectory", "stage", "model"], name="trajectory_llm_usage_unique_stage_model"
            )
        ]

    def __str__(self) -> str:
        return f"{self.stage} {self.model}: {self.prompt_tokens}+{self.completion_tokens} tokens"


class LLMBudgetHold(models.Model):
    """Tokens set aside from a bank's daily LLM budget for one call in flight (pipeline.llm_usage):
    held before the call, replaced by its real usage after it, dropped when it fails."""

    bank = models.ForeignKey(Bank, on_delete=models.CASCADE, related_name="+")
    day = models.DateField()
    tokens = models.BigIntegerField()
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        indexes = [models.Index(fields=["bank", "day"])]

    def __str__(self) -> str:
        return f"{self.tokens} tokens held on {self.day}"
