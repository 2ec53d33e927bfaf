"""The per-bank policy forms: learning after serving, review, trust."""

import re

from django import forms

from memories.learning.models import BankLearning
from memories.learning.policy import BANK_LEARNING_SETTINGS
from memories.review.policy import DECISIONS_MAX, ONE_DECISION_OPEN
from memories.review.policy_models import GUIDELINES_MAX, Distribution
from memories.trust.models import TrustPolicy
from reasoningbank_site.formfields import BoundedDateTimeField


class BankLearningForm(forms.ModelForm):
    """A bank's learning policy (memories.learning.policy.bank_learning_update validates and audits it)."""

    environment_keys = forms.CharField(
        required=False,
        max_length=700,
        label="Metadata that makes an item stale when it changes",
        help_text=BankLearning._meta.get_field("environment_keys").help_text + " Separate them with commas.",
    )

    class Meta:
        model = BankLearning
        fields = BANK_LEARNING_SETTINGS
        labels = {
            "repeat_threshold": "Similarity that repeats a refused lesson",
            "rejected_examples": "Refused lessons shown to the distiller",
            "valid_days": "Approved items expire after (days)",
            "suspend_when_hurting": "Stop serving items that hurt",
            "utility_weight": "Weight of measured usefulness in ranking",
            "utility_prior": "Retrievals before usefulness counts half",
        }

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.initial["environment_keys"] = ", ".join(self.instance.environment_keys or [])

    def clean_environment_keys(self) -> list[str]:
        return [key for key in re.split(r"[,\s]+", self.cleaned_data.get("environment_keys") or "") if key]


class ReviewPolicyForm(forms.Form):
    guidelines = forms.CharField(
        required=False,
        label="Reviewer guidelines",
        max_length=GUIDELINES_MAX,
        widget=forms.Textarea(attrs={"rows": 12, "class": "mono"}),
        help_text="Markdown: what to approve, what to reject, examples. Shown beside the queue and each item.",
    )
    decisions_required = forms.IntegerField(
        min_value=1,
        max_value=DECISIONS_MAX,
        label="Independent decisions per item",
        help_text="1: the first reviewer's decision stands.",
    )
    distribution = forms.ChoiceField(
        choices=Distribution.choices,
        required=False,
        label="Who decides, when an item needs several",
        help_text="Only with 2 or more decisions per item (with one, any reviewer gives it). Owners and admins "
        "decide outright, whatever this says: that is how they resolve conflicts. Leaving round-robin frees the "
        "places it dealt that nobody has decided on.",
    )

    def clean_distribution(self) -> str:
        return self.cleaned_data.get("distribution") or Distribution.OPEN

    def clean(self):
        data = super().clean()
        required = data.get("decisions_required")
        if required is not None and required < 2 and data.get("distribution", Distribution.OPEN) != Distribution.OPEN:
            self.add_error("distribution", ONE_DECISION_OPEN)
        return data


# Corroboration settings a form may leave out (kept as they are); the on/off checkbox is the policy itself.
CORROBORATION_KEPT = ("corroboration_min_sources", "corroboration_distinct")


class TrustPolicyForm(forms.ModelForm):
    """The bank's trust policy (memories.trust.models.TrustPolicy); the audit share is edited in percent."""

    audit_percent = forms.IntegerField(
        min_value=0,
        max_value=100,
        label="Audit sample (%)",
        help_text="The share of auto-approvals a reviewer is asked to check (the first 50 all are).",
    )
    anomaly_percent = forms.FloatField(
        required=False,
        min_value=0,
        max_value=20,
        label="Anomaly false-flag rate (%)",
        help_text="The share of the bank's own approved items the anomaly score would flag as unlike the rest: "
        "a new item scoring above that threshold waits for a reviewer. 0 turns the score off; at most 20; empty keeps it.",
    )
    auto_approve_agents = forms.CharField(
        required=False, max_length=2000, label="Agent allow-list", help_text="Comma-separated; empty: any agent."
    )

    class Meta:
        model = TrustPolicy
        fields = [
            "min_tier",
            "auto_approve",
            "daily_llm_token_budget",
            "llm_risk_check",
            # Corroboration before serving.
            "corroboration_required",
            "corroboration_min_sources",
            "corroboration_distinct",
        ]
        labels = {
            "min_tier": "Serve only items whose verdicts reach",
            "auto_approve": "Approve safe items automatically",
            "daily_llm_token_budget": "LLM tokens per day",
            "llm_risk_check": "Ask the LLM for a second opinion on each distillation's risks",
            "corroboration_required": "Serve only items a human approved or enough independent runs support",
            "corroboration_min_sources": "Independent sources an item needs without a human",
            "corroboration_distinct": "Sources are independent when they come from",
        }
        help_texts = {
            "min_tier": "Items learnt under a weaker verdict stay in the bank but are not served.",
            "auto_approve": "Off by default. Only items with no risk, no recommended command, URL, payment or "
            "credential, no near-duplicate and no rejected twin; the rest wait for a reviewer.",
            "daily_llm_token_budget": "Prompt and completion tokens the judge and distiller may spend per UTC day. "
            "Past it, trajectories wait (nothing is lost). Empty: no budget.",
            "llm_risk_check": "Costs one more LLM call per distillation; its findings keep an item from being served "
            "until a reviewer confirms or dismisses them.",
            "corroboration_required": "Off by default. An item with no human approval is served only when it has no "
            "risk finding and the number below of independent source trajectories distilled it (seen again); "
            "auto-approval waits for them. A human's approval serves an item at once.",
            "corroboration_min_sources": "From 2 to 20.",
            "corroboration_distinct": "Runs: any two runs. Agents or API tokens: one agent (or token) repeating a "
            "run counts once; a run naming no agent (or sent without a token) counts for none.",
        }

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["audit_percent"].initial = round(self.instance.audit_share * 100)
        self.fields["auto_approve_agents"].initial = ", ".join(self.instance.auto_approve_agents)
        self.fields["anomaly_percent"].initial = round(self.instance.anomaly_false_flag_rate * 100, 2)
        for name in CORROBORATION_KEPT:  # a form sent without them (an older page) leaves them as they are
            self.fields[name].required = False

    def values(self) -> dict:
        """The cleaned form as bank_trust_policy_update keyword arguments."""
        data = self.cleaned_data
        agents = [a.strip() for a in data["auto_approve_agents"].split(",") if a.strip()]
        return {
            **{name: data[name] for name in self.Meta.fields if name not in CORROBORATION_KEPT or data[name]},
            "auto_approve_agents": agents,
            "audit_share": data["audit_percent"] / 100,
        } | ({} if data["anomaly_percent"] is None else {"anomaly_false_flag_rate": data["anomaly_percent"] / 100})


class UndoSinceForm(forms.Form):
    since = BoundedDateTimeField(
        label="Undo the policy's approvals since", widget=forms.DateTimeInput(attrs={"type": "datetime-local"})
    )
