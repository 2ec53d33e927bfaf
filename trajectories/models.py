"""What agents did: trajectories (normalized steps), and the judgments made of
them — many per trajectory, never overwritten."""

import uuid

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils import timezone

from accounts.models import ApiToken, Bank
from memories.items.experiences import Experience
from memories.serving.models import RetrievalEvent
from memories.trust.models import VerdictTier
from reasoningbank_site.search import SearchColumn
from trajectories.dashboard.counts import count_triggers


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
    # Its index is partial (trajectory_token, below), as are experience's and group_id's.
    token = models.ForeignKey(
        ApiToken, null=True, blank=True, on_delete=models.SET_NULL, related_name="trajectories", db_index=False
    )
    task = models.TextField()
    task_id = models.CharField(max_length=200, blank=True)  # indexed where set: trajectory_task, below
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
    # The agent's own LLM usage for the run, when it reported it (null: not reported).
    prompt_tokens = models.PositiveIntegerField(null=True, blank=True)
    completion_tokens = models.PositiveIntegerField(null=True, blank=True)
    # False for an evaluation try: judged like any other, never distilled into the bank.
    learn = models.BooleanField(default=True)

    # NULL, not "": the unique constraint below applies only to trajectories that sent one.
    external_id = models.CharField(max_length=200, null=True, blank=True)  # noqa: DJ001
    retrieval = models.ForeignKey(
        RetrievalEvent, null=True, blank=True, on_delete=models.SET_NULL, related_name="trajectories"
    )
    group_id = models.CharField(max_length=200, blank=True)
    group_size = models.PositiveSmallIntegerField(null=True, blank=True)
    experience = models.ForeignKey(
        Experience, null=True, blank=True, on_delete=models.SET_NULL, related_name="trajectories", db_index=False
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
            # Covering: the queue's and the list's agent dropdown (memories.review.selectors.review_agents) reads the
            # agents of a bank's latest 5,000 trajectories from the index alone (an Index Only Scan, no heap rows).
            models.Index(fields=["bank", "created_at"], include=["agent"], name="trajectory_bank_created_agent"),
            models.Index(fields=["bank", "status"]),
            # The runs whose agent reported one outcome and whose verdict says the other (the predicate of
            # memories.review.selectors.agent_judge_disagree, word for word, so the planner matches it): the
            # dashboard counts them and the trajectory list filters them without reading the bank's every row.
            models.Index(
                fields=["bank", "created_at"],
                condition=Q(outcome="success", verdict="failure") | Q(outcome="failure", verdict="success"),
                name="trajectory_disagree",
            ),
            models.Index(fields=["status", "updated_at"]),
            # The dispatcher's every-few-seconds query: rows whose publish failed (empty when all is well).
            models.Index(
                fields=["created_at"],
                condition=Q(enqueued_at__isnull=True, status__in=["received", "judged"]),
                name="trajectory_unqueued",
            ),
            # Retention's batches (trajectories.records.retention): only the finished rows it may still purge.
            models.Index(
                fields=["bank", "created_at", "id"],
                condition=Q(status__in=["done", "needs_attention"], steps_purged_at__isnull=True),
                name="trajectory_purgeable",
            ),
            # The runs a reviewer judged (a human judgment always sets the human tier; nothing lowers it): the
            # judge evaluation set reads them in keyset chunks (trajectories.exports.datasets.judge_eval_rows),
            # each chunk an index range read, not a probe of the judgments of every run of the bank.
            models.Index(
                fields=["bank", "created_at", "id"],
                condition=Q(verdict_tier=VerdictTier.HUMAN),
                name="trajectory_human_judged",
            ),
            # Partial: only the rows that have one. Many runs have no MaTTS group, experience or task id, and
            # some no token; a full index of a key that one value (NULL, "") holds for most rows is where the
            # retention purge's new row versions pile up: such indexes grew after each purge at a million rows.
            # A lookup by a value (a token's or an experience's SET_NULL, a group's members) implies the
            # condition, so the planner uses these (tests/trajectories/recording/test_partial_keys.py).
            models.Index(fields=["token"], condition=Q(token__isnull=False), name="trajectory_token"),
            models.Index(fields=["experience"], condition=Q(experience__isnull=False), name="trajectory_experience"),
            models.Index(fields=["bank", "group_id"], condition=~Q(group_id=""), name="trajectory_group"),
            models.Index(fields=["bank", "task_id"], condition=~Q(task_id=""), name="trajectory_task"),
        ]
        constraints = [
            models.UniqueConstraint(
                fields=["bank", "external_id"],
                condition=Q(external_id__isnull=False),
                name="trajectory_unique_bank_external_id",
            ),
        ]
        # The bank's counts per day, status and verdict, kept by the database (trajectories.dashboard.counts).
        triggers = count_triggers()

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
        indexes = [
            models.Index(fields=["trajectory", "created_at"]),
            # The human judgments (a few % of the rows): the dashboard's judge-agreement reads start from them
            # and probe the LLM's latest on the same trajectory (trajectories.dashboard.agreement).
            models.Index(
                fields=["trajectory", "created_at"], condition=Q(source="human"), name="judgment_human_latest"
            ),
            # The dashboard's recent activity: the latest judgments, newest first, read from the top.
            models.Index(fields=["created_at"], name="judgment_created"),
            # The reviewers page: a period's human verdicts, answered from the index alone (those with an author
            # only: the dashboard's reads of every human verdict keep judgment_human_latest's order).
            models.Index(
                fields=["created_at"],
                include=["trajectory", "author", "label", "id"],
                condition=Q(source="human", author__isnull=False),
                name="judgment_human_created",
            ),
        ]
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


# Each domain's own models, loaded with the app's (Django reads this module).
from trajectories.dashboard import models as dashboard_models  # noqa: E402, F401
from trajectories.evaluation import models as evaluation_models  # noqa: E402, F401
from trajectories.judging import models as judging_models  # noqa: E402, F401
from trajectories.otlp import models as otlp_models  # noqa: E402, F401
from trajectories.pipeline import models as pipeline_models  # noqa: E402, F401
from trajectories.records import models as records_models  # noqa: E402, F401
