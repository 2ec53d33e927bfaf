"""Tenancy: who may see and change what. Team → Membership (role) and the
banks a team owns, plus the API tokens agents use against one bank.

Bank lives here (not in memories) so that every access check — a user's role
on a bank, a token's bank — is answered inside this app and the dependency
direction stays trajectories → memories → accounts."""

import uuid

from django.conf import settings
from django.db import models
from django.db.models import Q


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


class Bank(models.Model):
    public_id = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="banks")
    name = models.CharField(max_length=120)
    slug = models.SlugField(max_length=60)
    description = models.TextField(blank=True)

    retrieval_mode = models.CharField(max_length=16, choices=RetrievalMode.choices, default=RetrievalMode.ITEMS)
    top_k = models.PositiveSmallIntegerField(default=3, help_text="Items (or experiences) served per retrieval.")
    min_similarity = models.FloatField(default=0.3, help_text="Cosine similarity below which nothing is served.")
    holdout_fraction = models.FloatField(default=0.0, help_text="Share of retrievals answered with no items, to measure lift.")
    judge_model = models.CharField(max_length=120, blank=True, help_text="Empty: the service default (RB_LLM_MODEL).")
    distill_model = models.CharField(max_length=120, blank=True, help_text="Empty: the service default (RB_LLM_MODEL).")
    trust_agent_outcome = models.BooleanField(default=False, help_text="Use the agent's own outcome signal instead of the LLM judge.")
    reward_threshold = models.FloatField(default=0.5, help_text="A reward at or above this counts as success when trusted.")
    rate_limit_per_minute = models.PositiveIntegerField(default=600)

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
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
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
