"""Memory items: what each one says, its status and origin, every version of it, and the evidence that
supports it (later distillations of the same lesson, items merged into it).
Also the limits and the tag rule every writer of an item shares."""

import re
import uuid

from django.conf import settings
from django.contrib.postgres.fields import ArrayField
from django.contrib.postgres.indexes import GinIndex
from django.db import models
from django.db.models import Q
from pgvector.django import HnswIndex, VectorField

from accounts.models import ApiToken, Bank
from memories.items.counts import ITEM_COUNTS
from memories.items.experiences import EMBEDDING_DIM, Experience
from reasoningbank_site.search import SearchColumn
from reasoningbank_site.text import is_cut

# Stated once: the model fields, the services' checks and the import's messages use these.
TITLE_MAX = 200
REASON_MAX = 200
# A memory item is a few sentences served inside agents' prompts: longer model output is cut
# (visibly, see reasoningbank_site.text.cut_text), longer human input refused.
DESCRIPTION_MAX = 1000
CONTENT_MAX = 4000
# Item tags: short lower-case slugs set by reviewers, filterable at retrieval.
TAG_MAX_LENGTH = 40
TAGS_MAX = 12
TAG_PATTERN = re.compile(r"^[a-z0-9][a-z0-9._-]*$")
# Provenance kept on an item for agent/metadata filters: distinct metadata objects of its source trajectories.
SOURCE_METADATA_MAX = 50


def normalize_tags(values) -> list[str]:
    """The one tag rule: each tag is stripped and lower-cased (inner spaces
    become "-"), at most TAG_MAX_LENGTH characters of letters, digits, ".",
    "_" or "-" starting with a letter or digit; duplicates and empty ones are
    dropped; at most TAGS_MAX tags; returned sorted. ``values`` is a list of
    strings or one string of tags separated by commas or spaces. Raises
    ValueError naming the first bad tag (callers turn it into their own error)."""
    if values is None:
        return []
    if isinstance(values, str):
        values = re.split(r"[,\s]+", values)
    if not isinstance(values, (list, tuple, set)):
        raise ValueError("tags must be a list of strings")
    tags = set()
    for value in values:
        if not isinstance(value, str):
            raise ValueError(f"a tag must be a string, not {type(value).__name__}")
        tag = "-".join(value.strip().lower().split())
        if not tag:
            continue
        if len(tag) > TAG_MAX_LENGTH:
            raise ValueError(f"tag {tag[:TAG_MAX_LENGTH]!r}… is longer than {TAG_MAX_LENGTH} characters")
        if not TAG_PATTERN.match(tag):
            raise ValueError(
                f"tag {tag!r} may only hold letters, digits, '.', '_' and '-', starting with a letter or digit"
            )
        tags.add(tag)
    if len(tags) > TAGS_MAX:
        raise ValueError(f"at most {TAGS_MAX} tags (got {len(tags)})")
    return sorted(tags)


class ItemStatus(models.TextChoices):
    PROPOSED = "proposed", "Proposed"
    APPROVED = "approved", "Approved"
    REJECTED = "rejected", "Rejected"
    ARCHIVED = "archived", "Archived"
    SUPERSEDED = "superseded", "Superseded"


class ItemOrigin(models.TextChoices):
    SUCCESS = "success", "Distilled from a success"
    FAILURE = "failure", "Distilled from a failure"
    MATTS_PARALLEL = "matts-parallel", "MaTTS parallel (self-contrast)"
    MATTS_SEQUENTIAL = "matts-sequential", "MaTTS sequential (refinement)"
    MANUAL = "manual", "Written by hand"
    IMPORT = "import", "Imported"


def item_search_vector() -> SearchColumn:
    """What the item list's text search matches: the stored column
    ``to_tsvector('simple', title || ' ' || description || ' ' || content)``
    with its GIN index ``memoryitem_search_gin`` (migration 0010;
    reasoningbank_site/search.py)."""
    return SearchColumn("search_vector")


class MemoryItem(models.Model):
    public_id = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    bank = models.ForeignKey(Bank, on_delete=models.CASCADE, related_name="items")
    experience = models.ForeignKey(Experience, null=True, blank=True, on_delete=models.SET_NULL, related_name="items")
    title = models.CharField(max_length=TITLE_MAX)
    description = models.TextField(max_length=DESCRIPTION_MAX)
    content = models.TextField(max_length=CONTENT_MAX)
    status = models.CharField(max_length=16, choices=ItemStatus.choices, default=ItemStatus.PROPOSED)
    origin = models.CharField(max_length=20, choices=ItemOrigin.choices, default=ItemOrigin.MANUAL)
    # Provenance: the task id for the leave-one-task-out guard, and the steps
    # the model cited as [{"trajectory": "<uuid>", "step": n}, ...].
    source_task_id = models.CharField(max_length=200, blank=True, db_index=True)
    cited_steps = models.JSONField(default=list, blank=True)
    # What produced it (distilled items) and under which verdict.
    model = models.CharField(max_length=120, blank=True)
    prompt_version = models.CharField(max_length=60, blank=True)
    verdict_label = models.CharField(max_length=16, blank=True)
    # Near-duplicate suggestions recorded at proposal: [{"id": "<uuid>", "similarity": 0.93}].
    near_duplicates = models.JSONField(default=list, blank=True)
    needs_review_reason = models.CharField(max_length=REASON_MAX, blank=True)
    # How many MemoryItemSupport rows it has (later distillations of the same lesson, merged items).
    support_count = models.PositiveIntegerField(default=0, db_default=0)  # db_default: raw COPYs (bench) too
    # Its independent source trajectories (its own and its "seen again" and merged evidence's): distinct runs
    # (a MaTTS group counts once), distinct named agents, distinct API tokens (memories.items.corroboration).
    corroborating_runs = models.PositiveIntegerField(default=0, db_default=0)
    corroborating_agents = models.PositiveIntegerField(default=0, db_default=0)
    corroborating_tokens = models.PositiveIntegerField(default=0, db_default=0)
    status_reason = models.TextField(blank=True)
    # Reviewers' tags (normalize_tags) and the source trajectories' agents and metadata objects
    # (written at proposal), so retrieval filters on them inside the vector search.
    tags = ArrayField(models.CharField(max_length=TAG_MAX_LENGTH), default=list, blank=True)
    source_agents = ArrayField(models.CharField(max_length=200), default=list, blank=True)
    source_metadata = models.JSONField(default=list, blank=True)

    # The embedding is of `embedded_text`'s hash; a stale or missing one is
    # never searched (see memories.serving.search).
    embedding = VectorField(dimensions=EMBEDDING_DIM, null=True, blank=True)
    embedding_hash = models.CharField(max_length=64, blank=True)
    embedding_model = models.CharField(max_length=200, blank=True)

    served_count = models.PositiveIntegerField(default=0)
    last_served_at = models.DateTimeField(null=True, blank=True)

    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)
    approved_at = models.DateTimeField(null=True, blank=True)
    approved_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )

    # After serving (memories.learning.models): not served after valid_until; the environment it was
    # learnt in; why it is stale or proposed for retirement (empty: it is not); suspended from serving
    # until a reviewer decides; archived because it was wrong (its repeats are refused like a rejection's).
    valid_until = models.DateTimeField(null=True, blank=True)
    environment = models.JSONField(default=dict, blank=True, db_default={})
    stale_reason = models.CharField(max_length=REASON_MAX, blank=True, db_default="")
    stale_environment = models.JSONField(default=dict, blank=True, db_default={})  # the newer values seen
    retirement_reason = models.TextField(blank=True, db_default="")
    retirement_evidence = models.JSONField(default=dict, blank=True, db_default={})
    suspended = models.BooleanField(default=False, db_default=False)
    archived_as_wrong = models.BooleanField(default=False, db_default=False)
    # Impact's per-item effect (served − withheld success rate) and the judged retrievals behind it,
    # written by a periodic task; utility ranking shrinks it toward zero while outcome_n is small.
    outcome_effect = models.FloatField(null=True, blank=True)
    outcome_n = models.PositiveIntegerField(default=0, db_default=0)
    superseded_by = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.SET_NULL, related_name="supersedes"
    )

    class Meta:
        indexes = [
            models.Index(fields=["bank", "status", "created_at"]),
            # The queue's order (created_at, id) by status: a page's keys under its OFFSET are read from this
            # index alone, not from every skipped row of the table (10,000 rows: ~170 ms, heap reads).
            models.Index(fields=["bank", "status", "created_at", "id"], name="memoryitem_queue_order"),
            # The item list's order (newest change first): a page is an index walk, not a sort of the bank.
            models.Index(fields=["bank", "updated_at"], name="memoryitem_bank_updated"),
            # Items whose validity ran out since a release: the draft diff reads them without reading the bank.
            models.Index(
                fields=["bank", "valid_until"],
                name="memoryitem_bank_valid_until",
                condition=Q(valid_until__isnull=False),
            ),
            # The exports' keyset chunks (oldest first; the served export by approval): each chunk is an
            # index range read, so the first row does not wait for a sort of the bank.
            models.Index(fields=["bank", "created_at", "id"], name="memoryitem_bank_created_id"),
            models.Index(fields=["bank", "approved_at", "id"], name="memoryitem_bank_approved_id"),
            # Items a distill prompt proposed, not superseded: the dashboard's distill outcomes count them per
            # version and status from this index alone, not from a read of every bank's items.
            models.Index(
                fields=["bank", "prompt_version", "status"],
                include=["id"],
                name="memoryitem_bank_distilled",
                condition=~Q(prompt_version="") & ~Q(status="superseded"),
            ),
            GinIndex(name="memoryitem_tags_gin", fields=["tags"]),
            GinIndex(name="memoryitem_source_agents_gin", fields=["source_agents"]),
            GinIndex(name="memoryitem_source_meta_gin", fields=["source_metadata"], opclasses=["jsonb_path_ops"]),
            # m=32 / ef_construction=128: a denser graph than the default keeps recall high on items in
            # tight clusters (bench/retrieval_recall.py), for a slower build and about twice the links.
            HnswIndex(
                name="memoryitem_embedding_hnsw",
                fields=["embedding"],
                m=32,
                ef_construction=128,
                opclasses=["vector_cosine_ops"],
            ),
        ]
        constraints = [
            models.CheckConstraint(condition=~Q(title=""), name="memoryitem_title_not_empty"),
        ]
        # The bank's maintained item counts (memories.items.counts).
        triggers = ITEM_COUNTS.triggers()

    def __str__(self) -> str:
        return self.title

    @property
    def text_was_cut(self) -> bool:
        """Whether distilled text was cut to its limit (the item page shows a note to reviewers)."""
        return is_cut(self.title) or is_cut(self.description) or is_cut(self.content)


class MemoryItemVersion(models.Model):
    """An append-only snapshot written on every change of an item's text or
    status: who, when, what it became. Diffs are computed between neighbours."""

    item = models.ForeignKey(MemoryItem, on_delete=models.CASCADE, related_name="versions")
    number = models.PositiveIntegerField()
    title = models.CharField(max_length=TITLE_MAX)
    description = models.TextField()
    content = models.TextField()
    status = models.CharField(max_length=16, choices=ItemStatus.choices)
    tags = ArrayField(models.CharField(max_length=TAG_MAX_LENGTH), default=list, blank=True)
    action = models.CharField(
        max_length=40, help_text="created, edited, approved, rejected, archived, superseded, merged…"
    )
    note = models.TextField(blank=True)
    author = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    # Set when an API token (scope review) made the change; author is then empty.
    actor_token = models.ForeignKey(ApiToken, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["number"]
        constraints = [models.UniqueConstraint(fields=["item", "number"], name="memoryitemversion_unique_number")]
        # The newest versions of every bank, walked back until a dozen are the bank's (the dashboard's recent
        # activity), instead of a sort of every version.
        indexes = [
            models.Index(fields=["created_at"], name="memoryitemversion_created"),
            # The reviewers page: a period's decisions and edits by people, answered from the index alone.
            models.Index(
                fields=["created_at"],
                include=["item", "author", "action", "number"],
                condition=Q(author__isnull=False),
                name="itemversion_authored_created",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.item_id} v{self.number} ({self.action})"

    @property
    def actor_label(self) -> str:
        """Who made this version: a user, a token of the review API, else the pipeline."""
        if self.author_id:
            return self.author.get_username()
        if self.actor_token_id:
            return f"token {self.actor_token.prefix}… ({self.actor_token.name})"
        return "the pipeline"


class SupportKind(models.TextChoices):
    DISTILLED = "distilled", "Distilled again"
    MERGED = "merged", "Merged in by a reviewer"
    REPEATED = "repeated", "Proposed again after rejection"


class MemoryItemSupport(models.Model):
    """Supporting evidence for an item: a later distillation that found the same
    lesson (similarity ≥ the bank's duplicate threshold) and so was recorded here
    instead of becoming a new proposal, or an item a reviewer merged into it. The
    evidence's own text is kept, so reviewers can see what was distilled again."""

    item = models.ForeignKey(MemoryItem, on_delete=models.CASCADE, related_name="supports")
    kind = models.CharField(max_length=16, choices=SupportKind.choices, default=SupportKind.DISTILLED)
    experience = models.ForeignKey(Experience, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    # Public ids (strings) of the trajectories it came from: the cited ones, else the experience's.
    trajectory_ids = models.JSONField(default=list, blank=True)
    merged_item = models.ForeignKey(MemoryItem, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    similarity = models.FloatField(null=True, blank=True)
    title = models.CharField(max_length=TITLE_MAX)
    description = models.TextField(blank=True)
    content = models.TextField(blank=True)
    origin = models.CharField(max_length=20, choices=ItemOrigin.choices, blank=True)
    verdict_label = models.CharField(max_length=16, blank=True)
    cited_steps = models.JSONField(default=list, blank=True)
    model = models.CharField(max_length=120, blank=True)
    prompt_version = models.CharField(max_length=60, blank=True)
    author = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["created_at", "id"]

    def __str__(self) -> str:
        return f"support of {self.item_id} ({self.kind})"


class MemoryItemCount(models.Model):
    """A signed number of a bank's items with this status and flag (memories.items.counts): written by the
    triggers on items (+1 for an item's new key, -1 for its old one), merged by the dashboard's beat task; a
    key's count is the sum of its rows."""

    # No database constraint: the triggers write the -1 rows of a bank's items while the bank is being deleted;
    # those sum to zero with its +1 rows and compaction drops them. Its index is the (bank, status) one below.
    bank = models.ForeignKey(Bank, on_delete=models.DO_NOTHING, db_constraint=False, db_index=False, related_name="+")
    status = models.CharField(max_length=16)
    flagged = models.BooleanField()
    n = models.IntegerField()

    class Meta:
        indexes = [models.Index(fields=["bank", "status"], name="memoryitemcount_bank_status")]

    def __str__(self) -> str:
        return f"{self.status}{' flagged' if self.flagged else ''}: {self.n:+d}"
