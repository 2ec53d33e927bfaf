"""Tenancy: who may see and change what. Team → Membership (role) and the
banks a team owns, plus the API tokens agents use against one bank.

Bank lives here (not in memories) so that every access check — a user's role
on a bank, a token's bank — is answered inside this app and the dependency
direction stays trajectories → memories → accounts."""

import math
import uuid

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.serializers.json import DjangoJSONEncoder
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models
from django.db.models import Q
from django.utils import timezone

from accounts.audit.actions import audit_action_label


class Role(models.TextChoices):
    OWNER = "owner", "Owner"
    ADMIN = "admin", "Admin"
    REVIEWER = "reviewer", "Reviewer"
    VIEWER = "viewer", "Viewer"


# Higher rank includes every right of the lower ones.
ROLE_RANK = {Role.VIEWER: 0, Role.REVIEWER: 1, Role.ADMIN: 2, Role.OWNER: 3}


class Team(models.Model):
    public_id = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    name = models.CharField(max_length=120)
    slug = models.SlugField(max_length=60, unique=True)
    created_at = models.DateTimeField(auto_now_add=True)
    members = models.ManyToManyField(settings.AUTH_USER_MODEL, through="Membership", related_name="teams")

    def __str__(self) -> str:
        return self.name


class Membership(models.Model):
    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="memberships")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="memberships")
    role = models.CharField(max_length=16, choices=Role.choices, default=Role.VIEWER)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["team", "user"], name="membership_unique_team_user")]

    def __str__(self) -> str:
        return f"{self.user} in {self.team} ({self.role})"

    def has_role(self, role: str) -> bool:
        return ROLE_RANK[Role(self.role)] >= ROLE_RANK[Role(role)]


class RetrievalMode(models.TextChoices):
    ITEMS = "items", "Items (embed memory items, return the top-k items)"
    EXPERIENCES = "experiences", "Experiences (embed past tasks, return their items — the paper's)"


# The most items (or experiences) one retrieval may serve: a bank's top_k and a request's k.
MAX_TOP_K = 20
MAX_RATE_LIMIT = 1_000_000
MAX_FEW_SHOT_CHARS = 20_000
# Duplicates (memories consolidation, approval check, retrieval): at or above this cosine similarity.
# Not below the near-duplicate suggestions' 0.85 (memories.review.duplicates), which the consolidation search starts from.
DEFAULT_DUPLICATE_THRESHOLD = 0.92
MIN_DUPLICATE_THRESHOLD = 0.85
MAX_RETENTION_DAYS = 3650


# A bank's settings are validated here, once: the settings forms are ModelForms
# and the services call full_clean(), so both state the same rules.
def _between(low, high, message: str) -> list:
    return [MinValueValidator(low, message=message), MaxValueValidator(high, message=message)]


def validate_finite(value) -> None:
    if not math.isfinite(value):
        raise ValidationError("Must be a number (not infinity or NaN).", code="not_finite")


def validate_not_blank(value) -> None:
    if not str(value).strip():
        raise ValidationError("A bank needs a name.", code="blank")


class Bank(models.Model):
    public_id = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="banks")
    name = models.CharField(
        max_length=120, validators=[validate_not_blank], error_messages={"blank": "A bank needs a name."}
    )
    slug = models.SlugField(max_length=60)
    description = models.TextField(blank=True)

    retrieval_mode = models.CharField(max_length=16, choices=RetrievalMode.choices, default=RetrievalMode.ITEMS)
    top_k = models.PositiveSmallIntegerField(
        default=3,
        validators=_between(1, MAX_TOP_K, f"Between 1 and {MAX_TOP_K}."),
        help_text=f"Items (or experiences) served per retrieval, 1–{MAX_TOP_K}.",
    )
    min_similarity = models.FloatField(
        default=0.3,
        validators=_between(-1.0, 1.0, "Between -1 and 1."),
        help_text="Cosine similarity below which nothing is served (-1 to 1).",
    )
    duplicate_threshold = models.FloatField(
        default=DEFAULT_DUPLICATE_THRESHOLD,
        validators=_between(
            MIN_DUPLICATE_THRESHOLD, 1.0, f"Between {MIN_DUPLICATE_THRESHOLD} and 1 (1: only identical text)."
        ),
        help_text=f"Cosine similarity at or above which two items are duplicates, {MIN_DUPLICATE_THRESHOLD}–1: "
        "a newly distilled item this close to a proposed or approved one becomes supporting evidence on it, "
        "approving next to such an approved item asks for confirmation, and retrieval serves only the better one.",
    )
    holdout_fraction = models.FloatField(
        default=0.0,
        validators=_between(0.0, 1.0, "Between 0 and 1."),
        help_text="Share of agent retrievals answered with no memories (the holdout arm), 0–1. "
        "The Impact page compares the outcomes of both arms to show whether this bank helps.",
    )
    item_holdout_fraction = models.FloatField(
        default=0.0,
        validators=_between(0.0, 0.5, "Between 0 and 0.5."),
        help_text="In retrievals that serve memories, the chance that each item is left out on its own, 0–0.5 "
        "(e.g. 0.1). The agent then gets fewer items; the Impact page compares each item's served and "
        "left-out outcomes to measure that item's own effect.",
    )
    # Retrieval's second phase (memories.serving.preview): the switch is on the bank row, which
    # the token's query loads, so a bank that does not rank pays no query for it.
    utility_ranking = models.BooleanField(
        default=False,
        db_default=False,
        help_text="Order served items by similarity blended with their measured utility (Impact's per-item "
        "effects), instead of similarity alone. Its weight and shrinkage are learning settings.",
    )
    # What retrieval serves, copied from the bank's release labels by memories.releases.labels (the source
    # of truth is memories.BankReleasing): on the bank row, which the token's query loads, so serving by
    # release costs no query. Numbers of the bank's releases; filtered: production is not the approved set.
    release_production = models.PositiveIntegerField(null=True, blank=True, editable=False)
    release_canary = models.PositiveIntegerField(null=True, blank=True, editable=False)
    release_canary_fraction = models.FloatField(default=0, db_default=0, editable=False)
    release_filtered = models.BooleanField(default=False, db_default=False, editable=False)
    judge_model = models.CharField(max_length=120, blank=True, help_text="Empty: the service default (RB_LLM_MODEL).")
    distill_model = models.CharField(max_length=120, blank=True, help_text="Empty: the service default (RB_LLM_MODEL).")
    trust_agent_outcome = models.BooleanField(
        default=False, help_text="Use the agent's own outcome signal instead of the LLM judge."
    )
    reward_threshold = models.FloatField(
        default=0.5,
        validators=[validate_finite],
        help_text="A reward at or above this counts as success when trusted.",
    )
    few_shot_enabled = models.BooleanField(
        default=False,
        help_text="Show the judge and the distiller reviewers' past decisions on similar trajectories as examples.",
    )
    few_shot_max_chars = models.PositiveIntegerField(
        default=4000,
        validators=_between(500, MAX_FEW_SHOT_CHARS, f"Between 500 and {MAX_FEW_SHOT_CHARS:,} characters."),
        help_text=f"The most characters of examples added to one prompt, 500–{MAX_FEW_SHOT_CHARS:,}.",
    )
    rate_limit_per_minute = models.PositiveIntegerField(
        default=600,
        validators=_between(0, MAX_RATE_LIMIT, f"Between 0 (no limit) and {MAX_RATE_LIMIT:,} per minute."),
        help_text="Requests per minute per token on the agent API; 0 means no limit.",
    )
    ingest_quota_per_day = models.PositiveIntegerField(
        null=True,
        blank=True,
        validators=_between(1, MAX_RATE_LIMIT, f"Between 1 and {MAX_RATE_LIMIT:,} trajectories a day, or empty."),
        help_text="Trajectories one token may send per UTC day; empty means no limit.",
    )
    step_retention_days = models.PositiveIntegerField(
        null=True,
        blank=True,
        validators=_between(
            1, MAX_RETENTION_DAYS, f"Between 1 and {MAX_RETENTION_DAYS:,} days, or empty to keep them."
        ),
        help_text="Delete the steps and final answer of finished trajectories older than this many days "
        "(their task, verdicts, rationales and memory items stay). Empty: keep them forever.",
    )

    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)
    archived_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["team", "slug"], name="bank_unique_team_slug")]

    def __str__(self) -> str:
        return f"{self.team.slug}/{self.slug}"

    @property
    def is_archived(self) -> bool:
        return self.archived_at is not None


class Scope(models.TextChoices):
    RETRIEVE = "retrieve", "Retrieve memories"
    INGEST = "ingest", "Send trajectories"
    REVIEW = "review", "Review memory items and export datasets"


def validate_token_expiry(value) -> None:
    """A new token's expiry (the token form and api_token_create both apply it)."""
    if value is not None and value <= timezone.now():
        raise ValidationError("The expiry must be in the future.", code="expiry_past")


class ApiToken(models.Model):
    """A bearer token bound to one bank. Only a SHA-256 of the secret is
    stored (tokens are 256-bit random, so a slow hash buys nothing); the
    ``prefix`` identifies it in lists and logs."""

    public_id = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    bank = models.ForeignKey(Bank, on_delete=models.CASCADE, related_name="tokens")
    name = models.CharField(max_length=120)
    prefix = models.CharField(max_length=16, unique=True)
    token_hash = models.CharField(max_length=64, unique=True)
    scopes = models.JSONField(default=list)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)
    last_used_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        indexes = [models.Index(fields=["bank", "created_at"])]
        constraints = [models.CheckConstraint(condition=~Q(name=""), name="apitoken_name_not_empty")]

    def __str__(self) -> str:
        return f"{self.prefix}… ({self.name})"

    def has_scope(self, scope: str) -> bool:
        return scope in self.scopes


class InvitationState(models.TextChoices):
    PENDING = "pending", "Pending"
    ACCEPTED = "accepted", "Accepted"
    REVOKED = "revoked", "Revoked"
    EXPIRED = "expired", "Expired"


class InvitationQuerySet(models.QuerySet):
    def pending(self) -> "InvitationQuerySet":
        """Invitations whose ``state`` is pending (the same rule, in SQL)."""
        return self.filter(accepted_at__isnull=True, revoked_at__isnull=True, expires_at__gt=timezone.now())


class Invitation(models.Model):
    """A one-time, expiring invitation to join a team. Only a SHA-256 of the
    link's random token is stored; the link is emailed once."""

    public_id = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="invitations")
    email = models.EmailField()
    role = models.CharField(max_length=16, choices=Role.choices, default=Role.VIEWER)
    token_hash = models.CharField(max_length=64, unique=True)
    invited_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField()
    accepted_at = models.DateTimeField(null=True, blank=True)
    accepted_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    revoked_at = models.DateTimeField(null=True, blank=True)
    # False: only an account with ``email`` may accept; True: the inviter allowed any account.
    allow_any_email = models.BooleanField(default=False)

    objects = InvitationQuerySet.as_manager()

    class Meta:
        indexes = [models.Index(fields=["team", "created_at"])]

    def __str__(self) -> str:
        return f"{self.email} → {self.team} ({self.role})"

    @property
    def state(self) -> InvitationState:
        """Where the invitation stands; the one place this is decided (used
        once, withdrawn, past its expiry, else pending)."""
        if self.accepted_at:
            return InvitationState.ACCEPTED
        if self.revoked_at:
            return InvitationState.REVOKED
        if self.expires_at <= timezone.now():
            return InvitationState.EXPIRED
        return InvitationState.PENDING


class TokenUsage(models.Model):
    """Requests of one token in one fixed one-minute window: the rate
    limiter's counter and, summed, the token's request counts. Written with
    one upsert per API request (see accounts.tokens.usage.api_token_hit)."""

    token = models.ForeignKey(ApiToken, on_delete=models.CASCADE, related_name="usage")
    window_start = models.DateTimeField()
    count = models.PositiveIntegerField(default=0)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["token", "window_start"], name="tokenusage_unique_window")]

    def __str__(self) -> str:
        return f"{self.token_id} @ {self.window_start:%Y-%m-%d %H:%M}: {self.count}"


class AuditEvent(models.Model):
    """Who (a user or a token) did what to which object, with before/after
    snapshots. Append-only; written by services through ``audit_record``."""

    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="audit_events")
    bank = models.ForeignKey(Bank, null=True, blank=True, on_delete=models.SET_NULL, related_name="audit_events")
    actor_user = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    actor_token = models.ForeignKey(ApiToken, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    action = models.CharField(max_length=60)
    object_type = models.CharField(max_length=60, blank=True)
    object_id = models.CharField(max_length=64, blank=True)
    object_repr = models.CharField(max_length=200, blank=True)
    before = models.JSONField(null=True, blank=True, encoder=DjangoJSONEncoder)
    after = models.JSONField(null=True, blank=True, encoder=DjangoJSONEncoder)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [
            models.Index(fields=["team", "created_at"]),
            models.Index(fields=["bank", "created_at"]),
            models.Index(fields=["team", "action"]),
        ]

    def __str__(self) -> str:
        return f"{self.action} {self.object_type}:{self.object_id}"

    @property
    def actor_label(self) -> str:
        if self.actor_user_id:
            return self.actor_user.get_username()
        if self.actor_token_id:
            return f"token {self.actor_token.prefix}… ({self.actor_token.name})"
        return "system"

    @property
    def action_label(self) -> str:
        return audit_action_label(self.action)


# Defined in their own module (the webhooks package); imported here so Django registers them with this app.
from accounts.webhooks.models import WebhookAttempt, WebhookDelivery, WebhookSubscription  # noqa: E402, F401
