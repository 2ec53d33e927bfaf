"""Bank releases: numbered, immutable snapshots of a bank's approved set
(item ids and item versions), the labels that say which release agents are
served (production, an optional canary with a traffic share) and the bank's
publishing mode.

A release's members are stored as intervals: a ``ReleaseMember`` row says
that version ``version`` of an item is in every release numbered from
``added_in`` up to (not including) ``removed_in`` (null: still in the latest
release). Publishing writes only what changed, so a release costs rows for
its changes, not for the whole bank, and release N is one range condition."""

import uuid

from django.conf import settings
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models
from django.db.models import Q

from accounts.models import Bank
from memories.items.models import MemoryItem

NOTE_MAX = 500
CANARY_FRACTION_MAX = 0.99


class PublishMode(models.TextChoices):
    AUTOMATIC = "automatic", "Automatic: every change is published at once"
    MANUAL = "manual", "Manual: changes wait for “Publish release”"


class ReleaseSource(models.TextChoices):
    AUTOMATIC = "automatic", "Published automatically"
    PUBLISHED = "published", "Published by hand"
    IMPORTED = "imported", "Imported"


class EvaluationGate(models.TextChoices):
    OFF = "off", "Off: releases are published without an evaluation"
    NOT_WORSE = "not_worse", "Required: not worse than production"
    BEATS_CONTROL = "beats_control", "Required: not worse than production, and better than the same-budget control"


class Release(models.Model):
    """One numbered release of a bank: never changed after it is written."""

    public_id = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    bank = models.ForeignKey(Bank, on_delete=models.CASCADE, related_name="releases")
    number = models.PositiveIntegerField()
    note = models.CharField(max_length=NOTE_MAX, blank=True)
    source = models.CharField(max_length=16, choices=ReleaseSource.choices, default=ReleaseSource.AUTOMATIC)
    item_count = models.PositiveIntegerField(default=0)
    added = models.PositiveIntegerField(default=0)
    changed = models.PositiveIntegerField(default=0)
    removed = models.PositiveIntegerField(default=0)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    # When the release was first production or canary (null: never served, a candidate). A rollback to a
    # release served before is never held by the evaluation gate; one never served is a publish in disguise.
    first_served_at = models.DateTimeField(null=True, blank=True)
    # Written from the whole draft (not only the items one automatic change touched): from then on the
    # draft can differ from the newest release only in items changed since (memories.releases.selectors).
    whole_draft = models.BooleanField(default=False, db_default=False)

    class Meta:
        ordering = ["-number"]
        constraints = [models.UniqueConstraint(fields=["bank", "number"], name="release_unique_number")]

    def __str__(self) -> str:
        return f"release {self.number}"


class ReleaseMember(models.Model):
    """Version ``version`` of ``item`` is in the bank's releases ``added_in`` ≤ n < ``removed_in``."""

    bank = models.ForeignKey(Bank, on_delete=models.CASCADE, related_name="+", db_index=False)
    item = models.ForeignKey(MemoryItem, on_delete=models.CASCADE, related_name="release_memberships")
    version = models.PositiveIntegerField()
    added_in = models.PositiveIntegerField()
    removed_in = models.PositiveIntegerField(null=True, blank=True)

    class Meta:
        indexes = [
            # Serving release n: the item's open rows and its range, found from the item the search reads.
            models.Index(fields=["item", "added_in"], name="releasemember_item"),
            models.Index(fields=["bank"], condition=Q(removed_in__isnull=True), name="releasemember_open"),
        ]
        constraints = [
            models.UniqueConstraint(
                fields=["item"], condition=Q(removed_in__isnull=True), name="releasemember_one_open_per_item"
            )
        ]

    def __str__(self) -> str:
        return f"{self.item_id} v{self.version} in [{self.added_in}, {self.removed_in or '…'})"


class BankReleasing(models.Model):
    """A bank's publishing mode and labels; a bank without a row publishes
    automatically and has no release yet (created on first use)."""

    bank = models.OneToOneField(Bank, on_delete=models.CASCADE, related_name="releasing")
    mode = models.CharField(max_length=16, choices=PublishMode.choices, default=PublishMode.AUTOMATIC)
    latest = models.PositiveIntegerField(default=0)  # the number of the bank's newest release (0: none)
    production = models.ForeignKey(Release, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    canary = models.ForeignKey(Release, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    canary_fraction = models.FloatField(
        default=0,
        validators=[
            MinValueValidator(0, message="The canary share is between 0 and 99 %."),
            MaxValueValidator(CANARY_FRACTION_MAX, message="The canary share is between 0 and 99 %."),
        ],
    )
    canary_started_at = models.DateTimeField(null=True, blank=True)
    auto_rollback = models.BooleanField(
        default=False, help_text="Roll the canary back on its own when it is significantly worse than production."
    )
    # Whether a release must pass an evaluation run before it is published or canaried.
    evaluation_gate = models.CharField(max_length=16, choices=EvaluationGate.choices, default=EvaluationGate.OFF)
    # The last automatic rollback, shown on the bank's dashboard until a reviewer dismisses it.
    rollback_notice = models.TextField(blank=True)
    rollback_notice_at = models.DateTimeField(null=True, blank=True)
    updated_at = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return f"releasing of bank {self.bank_id}"


class ReleaseEvaluation(models.Model):
    """The outcome of one evaluation run for a release (its candidate arm), written by
    trajectories.evaluation when the run is created and when its results are known; what the
    publishing gate reads. ``passed`` is null while the run is under way."""

    release = models.ForeignKey(Release, on_delete=models.CASCADE, related_name="evaluations")
    run = models.UUIDField(unique=True)  # the EvalRun's public id
    passed = models.BooleanField(null=True, blank=True)
    # "better", "worse", "no_difference" or "" (not known yet) against each comparator arm.
    versus_production = models.CharField(max_length=16, blank=True)
    versus_control = models.CharField(max_length=16, blank=True)
    summary = models.CharField(max_length=500, blank=True)  # one sentence, shown on the releases page
    created_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"evaluation {self.run} of {self.release}"


class ImportState(models.TextChoices):
    CONFIRMING = "confirming", "Waiting for its risk findings to be confirmed"
    QUEUED = "queued", "Queued"
    RUNNING = "running", "Running"
    DONE = "done", "Done"
    FAILED = "failed", "Failed"


# The states that hold a bank's one import slot.
IMPORT_ACTIVE = (ImportState.QUEUED, ImportState.RUNNING)


class ReleaseImport(models.Model):
    """A release file to import into ``bank``, checked in the request and written by a worker
    (memories.releases.imports). Its ``records`` are emptied once it ends."""

    public_id = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    bank = models.ForeignKey(Bank, on_delete=models.CASCADE, related_name="release_imports")
    state = models.CharField(max_length=16, choices=ImportState.choices, default=ImportState.QUEUED)
    records = models.JSONField(default=list, blank=True)
    items = models.PositiveIntegerField(default=0)  # item lines in the file
    confirm_risks = models.BooleanField(default=False)
    risks = models.JSONField(default=list, blank=True)  # the findings shown for confirmation
    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    token = models.ForeignKey("accounts.ApiToken", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    created = models.PositiveIntegerField(default=0)
    kept = models.PositiveIntegerField(default=0)
    archived = models.PositiveIntegerField(default=0)
    release = models.PositiveIntegerField(null=True, blank=True)  # the number of the release it published
    message = models.TextField(blank=True)  # the outcome, or why it failed
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.UniqueConstraint(
                fields=["bank"], condition=Q(state__in=IMPORT_ACTIVE), name="releaseimport_one_active_per_bank"
            )
        ]

    def __str__(self) -> str:
        return f"release import {self.public_id} ({self.state})"

    @property
    def finished(self) -> bool:
        return self.state in (ImportState.DONE, ImportState.FAILED)
