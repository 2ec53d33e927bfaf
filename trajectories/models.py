"""What agents did: trajectories (normalized steps), and the judgments made of
them — many per trajectory, never overwritten."""

import uuid

import pgtrigger
from django.apps import apps
from django.conf import settings
from django.core.exceptions import ObjectDoesNotExist
from django.db import models, router, transaction
from django.db.models import Q
from django.utils import timezone

from accounts.models import ApiToken, Bank
from memories.items.experiences import Experience
from memories.serving.models import RetrievalEvent
from memories.trust.models import VerdictTier
from reasoningbank_site.search import JoinedSearchColumn
from trajectories.dashboard.counts import TRAJECTORY_COUNTS


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


def trajectory_search_vector() -> JoinedSearchColumn:
    """What the trajectory list's text search matches: the stored column
    ``to_tsvector('simple', task || ' ' || task_id)`` (GIN index
    ``trajectory_search_gin``) joined with the raw record's
    ``to_tsvector('simple', final_answer)`` (GIN index ``rawrecord_answer_gin``;
    migration 0026; reasoningbank_site/search.py). The final answer's words live
    with the raw record, so the retention purge deletes them with it."""
    return JoinedSearchColumn("search_vector", "trajectories_rawrecord", "answer_vector", "trajectory_id")


def raw_key_trigger() -> pgtrigger.Trigger:
    """Keeps the raw record's copies of the trajectory's bank and creation time (RawRecord, whose index
    retention reads) equal to the trajectory's, whatever writes them (an import's, a test's ageing)."""
    moved = " OR ".join(f"OLD.{column} IS DISTINCT FROM NEW.{column}" for column in ("bank_id", "created_at"))
    return pgtrigger.Trigger(
        name="trajectory_raw_key",
        when=pgtrigger.After,
        operation=pgtrigger.UpdateOf("bank_id", "created_at"),
        condition=pgtrigger.Condition(moved),
        func="UPDATE trajectories_rawrecord SET bank_id = NEW.bank_id, created_at = NEW.created_at"
        " WHERE trajectory_id = NEW.id; RETURN NULL;",
    )


# The raw record's fields, read and set on a Trajectory as if they were its own (Trajectory.steps, below).
RAW_FIELDS = ("steps", "final_answer")


class TrajectoryQuerySet(models.QuerySet):
    def bulk_create(self, objs, *args, **kwargs):
        """Trajectories and their raw records (trajectories.records.models.RawRecord), in one transaction."""
        with transaction.atomic(using=self.db, savepoint=False):
            objs = super().bulk_create(objs, *args, **kwargs)
            apps.get_model("trajectories", "RawRecord").objects.using(self.db).bulk_create(
                [t.raw_record_for_insert() for t in objs if t.pk is not None], batch_size=kwargs.get("batch_size")
            )
        return objs


class Trajectory(models.Model):
    public_id = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    bank = models.ForeignKey(Bank, on_delete=models.CASCADE, related_name="trajectories")
    # Its index is partial (trajectory_token, below), as are experience's and group_id's.
    token = models.ForeignKey(
        ApiToken, null=True, blank=True, on_delete=models.SET_NULL, related_name="trajectories", db_index=False
    )
    task = models.TextField()
    task_id = models.CharField(max_length=200, blank=True)  # indexed where set: trajectory_task, below
    # The steps and final answer are the raw record, in a table of its own (the properties below).
    step_count = models.PositiveIntegerField(default=0)
    input_format = models.CharField(max_length=16, choices=InputFormat.choices, default=InputFormat.STEPS)
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

    objects = TrajectoryQuerySet.as_manager()

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
        # The bank's counts per day, status and verdict, kept by the database (trajectories.dashboard.counts);
        # the raw record's copy of the bank and creation time.
        triggers = [*TRAJECTORY_COUNTS.triggers(), raw_key_trigger()]

    def __str__(self) -> str:
        return self.task[:80]

    def save(self, *args, **kwargs):
        """Saves the trajectory, and its raw record when it is new or its steps or final answer were set
        (``update_fields`` may name them: only the raw record is written for those)."""
        adding, dirty = self._state.adding, self.__dict__.get("_raw_dirty", False)
        update_fields = kwargs.get("update_fields")
        if update_fields is not None:
            kwargs["update_fields"] = [name for name in update_fields if name not in RAW_FIELDS]
        if not (adding or dirty):
            return super().save(*args, **kwargs)
        using = kwargs.get("using") or router.db_for_write(type(self), instance=self)
        with transaction.atomic(using=using, savepoint=False):
            if adding or kwargs.get("update_fields") != []:
                super().save(*args, **kwargs)
            self.raw_record_for_insert().save(force_insert=adding, using=using)
        return None

    def refresh_from_db(self, *args, **kwargs):
        for key in ("_raw", "_raw_dirty", "_purge"):
            self.__dict__.pop(key, None)
        super().refresh_from_db(*args, **kwargs)

    # The raw record: the steps (normalized; see trajectories.ingest for one step's shape) and the final answer,
    # kept in RawRecord (trajectories.records.models) until the bank's retention deletes it. Read and set here
    # as if they were fields: Trajectory(steps=..., final_answer=...), create() and bulk_create() store it
    # with the trajectory; a purged trajectory reads [] and "". A query that needs them joins "raw".

    def raw_record(self):
        """This trajectory's RawRecord (read once, or from select_related("raw")); None once purged."""
        if "_raw" not in self.__dict__:
            record = None
            if self.pk is not None:
                try:
                    record = self.raw
                except ObjectDoesNotExist:
                    record = None
            self.__dict__["_raw"] = record
        return self.__dict__["_raw"]

    def raw_record_for_insert(self):
        """The RawRecord to INSERT with this (just inserted) trajectory: what was set, else empty."""
        record = self.__dict__.get("_raw") or apps.get_model("trajectories", "RawRecord")()
        record.trajectory, record.bank_id, record.created_at = self, self.bank_id, self.created_at
        self.__dict__["_raw"], self.__dict__["_raw_dirty"] = record, False
        return record

    def _raw_to_write(self):
        record = self.raw_record()
        if record is None:
            record = self.__dict__["_raw"] = apps.get_model("trajectories", "RawRecord")()
        self.__dict__["_raw_dirty"] = True
        return record

    @property
    def steps(self) -> list:
        record = self.raw_record()
        return record.steps if record is not None else []

    @steps.setter
    def steps(self, value) -> None:
        self._raw_to_write().steps = value

    @property
    def final_answer(self) -> str:
        record = self.raw_record()
        return record.final_answer if record is not None else ""

    @final_answer.setter
    def final_answer(self, value) -> None:
        self._raw_to_write().final_answer = value

    @property
    def steps_purged(self) -> bool:
        """Whether the bank's retention deleted the raw record (a saved trajectory without one)."""
        return self.pk is not None and self.raw_record() is None

    @property
    def steps_purge(self):
        """The RetentionRun that purged the raw record (the first of the bank's runs whose cutoff came after
        this trajectory was created), or None: not purged, or the run is not on record."""
        if not self.steps_purged:
            return None
        if "_purge" not in self.__dict__:
            self.__dict__["_purge"] = (
                apps.get_model("trajectories", "RetentionRun")
                .objects.filter(bank_id=self.bank_id, created_before__gt=self.created_at)
                .order_by("ran_at", "pk")
                .first()
            )
        return self.__dict__["_purge"]

    @property
    def steps_purged_at(self):
        """When the raw record was purged (None: not purged, or the run is not on record)."""
        run = self.steps_purge
        return run.ran_at if run is not None else None

    @property
    def steps_purged_days(self):
        """The retention then in force, in days (None when steps_purged_at is)."""
        run = self.steps_purge
        return run.retention_days if run is not None else None


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
