"""Forms of the account, team, bank and token pages. They parse input only;
the rules live in the models' validators and the services beside them."""

from __future__ import annotations

from django import forms
from django.contrib.auth import get_user_model
from django.contrib.auth.forms import UserCreationForm
from django.core.validators import MaxValueValidator, MinValueValidator

from accounts.models import Bank, Role, Scope, validate_token_expiry
from accounts.teams.banks import BANK_SETTINGS
from reasoningbank_site.formfields import BoundedDateField, BoundedDateTimeField, validate_one_line


class SignupForm(UserCreationForm):
    email = forms.EmailField(required=True, help_text="For password resets and invitations.")

    class Meta(UserCreationForm.Meta):
        model = get_user_model()
        fields = ("username", "email")

    def clean_email(self):
        # One account per address: invitations and password resets are bound to it.
        email = self.cleaned_data["email"].strip()
        if get_user_model().objects.filter(email__iexact=email).exists():
            raise forms.ValidationError(
                "An account with this email address exists already. Log in, or reset its password."
            )
        return email


class TeamForm(forms.Form):
    name = forms.CharField(max_length=120, validators=[validate_one_line])


class InviteForm(forms.Form):
    email = forms.EmailField()
    role = forms.ChoiceField(choices=Role.choices, initial=Role.VIEWER)
    allow_any_email = forms.BooleanField(
        required=False, label="Any account may accept (not only this address's)", initial=False
    )


class RoleForm(forms.Form):
    role = forms.ChoiceField(choices=Role.choices)


# The settings' labels and the help the model fields lack, written for the people who set them.
BANK_LABELS = {
    "name": "Bank name",
    "description": "What this bank is for",
    "retrieval_mode": "What a retrieval matches",
    "top_k": "Memories served per retrieval",
    "min_similarity": "Least similarity served",
    "duplicate_threshold": "Similarity that makes a duplicate",
    "trust_agent_outcome": "Trust the agent's own outcome",
    "reward_threshold": "Reward that counts as success",
    "judge_model": "LLM model of the judge",
    "distill_model": "LLM model of the distiller",
    "few_shot_enabled": "Show reviewers' past decisions as examples",
    "few_shot_max_chars": "Longest examples per prompt (characters)",
    "holdout_fraction": "Share of retrievals served nothing (holdout)",
    "item_holdout_fraction": "Chance each item is left out (item holdout)",
    "utility_ranking": "Rank by measured usefulness too",
    "rate_limit_per_minute": "Requests per minute per token",
    "ingest_quota_per_day": "Trajectories per token per day",
    "step_retention_days": "Keep trajectory steps for (days)",
}
BANK_HELP = {
    "description": "Shown to your team beside the bank's name.",
    "retrieval_mode": "Items: the memories closest to the agent's task. Experiences: the past tasks closest to it, "
    "with all their memories (the paper's way).",
}


class BankFormMixin:
    """Shows the model fields' range validators to the browser as the inputs'
    ``min``/``max`` (the server applies the validators themselves)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        for name, field in self.fields.items():
            for validator in Bank._meta.get_field(name).validators:
                if isinstance(validator, MinValueValidator):
                    field.widget.attrs["min"] = validator.limit_value
                elif isinstance(validator, MaxValueValidator):
                    field.widget.attrs["max"] = validator.limit_value


class BankCreateForm(BankFormMixin, forms.ModelForm):
    class Meta:
        model = Bank
        fields = ["name", "description", "retrieval_mode", "top_k"]
        labels, help_texts = BANK_LABELS, BANK_HELP
        widgets = {"description": forms.Textarea(attrs={"rows": 2})}


class BankSettingsForm(BankFormMixin, forms.ModelForm):
    """Every setting of BANK_SETTINGS; the ranges are the model fields'
    validators (run by the ModelForm), the same ones the service applies."""

    class Meta:
        model = Bank
        fields = BANK_SETTINGS  # the one list the service validates and audits
        labels, help_texts = BANK_LABELS, BANK_HELP
        widgets = {"description": forms.Textarea(attrs={"rows": 2})}


class TokenForm(forms.Form):
    name = forms.CharField(max_length=120, help_text="Which agent uses it, e.g. 'web-agent prod'.")
    scopes = forms.MultipleChoiceField(
        choices=Scope.choices, widget=forms.CheckboxSelectMultiple, initial=[Scope.RETRIEVE, Scope.INGEST]
    )
    expires_at = BoundedDateTimeField(
        required=False,
        widget=forms.DateTimeInput(attrs={"type": "datetime-local"}, format="%Y-%m-%dT%H:%M"),
        help_text="Optional; UTC. Empty: never expires.",
        validators=[validate_token_expiry],
    )


class AuditFilterForm(forms.Form):
    action = forms.CharField(required=False)
    actor = forms.CharField(required=False, help_text="Username or token prefix")
    object = forms.CharField(required=False, help_text="Object id, type or name")
    since = BoundedDateField(required=False, widget=forms.DateInput(attrs={"type": "date"}))
    until = BoundedDateField(required=False, widget=forms.DateInput(attrs={"type": "date"}))
