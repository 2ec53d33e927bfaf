"""Trust: the tier of the verdicts items were learnt under, and each bank's
trust policy (what it serves). A verdict's tier is written on its trajectory
by the trajectories app; the order of the values is the order of trust."""

from __future__ import annotations

from django.conf import settings
from django.contrib.postgres.fields import ArrayField
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models

from accounts.models import Bank
from memories.items.models import MemoryItem


class VerdictTier(models.IntegerChoices):
    """Where a trajectory's effective verdict came from, weakest first (0: no verdict). The agent's own
    report ranks lowest: an agent that says it succeeded is not a judge, let alone a human."""

    NONE = 0, "No verdict"
    AGENT = 1, "The agent's own report"
    JUDGE = 2, "LLM judge"
    HUMAN = 3, "Human reviewer"


TIER_NAMES = {VerdictTier.AGENT: "agent", VerdictTier.JUDGE: "judge", VerdictTier.HUMAN: "human"}
TIER_BY_NAME = {name: tier for tier, name in TIER_NAMES.items()}


class CorroborationDistinct(models.TextChoices):
    """What makes two source trajectories of an item independent, for corroboration before serving."""

    RUNS = "runs", "different runs"
    AGENTS = "agents", "different agents"
    TOKENS = "tokens", "different API tokens"


CORROBORATION_MIN, CORROBORATION_MAX = 2, 20


class TrustPolicy(models.Model):
    """A bank's trust policy, made on first change (a bank without one trusts
    as the defaults say: every tier served)."""

    bank = models.OneToOneField(Bank, on_delete=models.CASCADE, related_name="trust_policy")
    # Serve only items whose source verdicts all reach this tier (0: any verdict).
    min_tier = models.PositiveSmallIntegerField(
        choices=VerdictTier.choices,
        default=VerdictTier.NONE,
        validators=[MinValueValidator(0), MaxValueValidator(VerdictTier.HUMAN)],
    )
    # Safe auto-approval (off by default): approves a proposed item only when it has no risk finding, is on no
    # topic of the gate, has no near-duplicate or rejected twin, reaches min_tier and at least the judge's, and
    # (when the list is set) came from one of the agents.
    auto_approve = models.BooleanField(default=False)
    auto_approve_agents = ArrayField(models.CharField(max_length=200), default=list, blank=True)
    # The share of auto-approvals sent to a human audit sample.
    audit_share = models.FloatField(default=0.10, validators=[MinValueValidator(0.0), MaxValueValidator(1.0)])
    # LLM tokens (prompt + completion) the bank may spend per UTC day (empty: no budget).
    daily_llm_token_budget = models.PositiveBigIntegerField(null=True, blank=True)
    # An LLM second opinion on each distillation's items (findings recorded with its prompt version).
    llm_risk_check = models.BooleanField(default=False)
    # The anomaly score's false-flag rate: the share of the bank's own approved items its threshold would flag
    # (memories.trust.anomaly; 0: off).
    anomaly_false_flag_rate = models.FloatField(
        default=0.02, validators=[MinValueValidator(0.0), MaxValueValidator(0.2)]
    )
    # Corroboration before serving (off by default): an item is served only when a human approved it, or at
    # least corroboration_min_sources independent source trajectories (as corroboration_distinct counts them)
    # support it and it has no risk finding (memories.serving.corroboration_q).
    corroboration_required = models.BooleanField(default=False)
    corroboration_min_sources = models.PositiveSmallIntegerField(
        default=3, validators=[MinValueValidator(CORROBORATION_MIN), MaxValueValidator(CORROBORATION_MAX)]
    )
    corroboration_distinct = models.CharField(
        max_length=8, choices=CorroborationDistinct.choices, default=CorroborationDistinct.RUNS
    )
    updated_at = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return f"trust policy of bank {self.bank_id}"


class AuditVerdict(models.TextChoices):
    PENDING = "", "Not audited yet"
    AGREE = "agree", "A human agrees"
    DISAGREE = "disagree", "A human disagrees"


class AutoApproval(models.Model):
    """One approval the bank's trust policy made (its audit trail; the item's
    history records it too), and, for the audit sample, what a human said."""

    item = models.ForeignKey(MemoryItem, on_delete=models.CASCADE, related_name="auto_approvals")
    bank = models.ForeignKey(Bank, on_delete=models.CASCADE, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)
    sampled = models.BooleanField(default=False)
    audit_verdict = models.CharField(max_length=8, choices=AuditVerdict.choices, blank=True, default="")
    audited_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    audited_at = models.DateTimeField(null=True, blank=True)
    undone_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        indexes = [models.Index(fields=["bank", "created_at"])]

    def __str__(self) -> str:
        return f"auto-approval of item {self.item_id}"


def tier_name(tier: int) -> str:
    """ "agent", "judge", "human", or "" for none."""
    return TIER_NAMES.get(tier, "")
