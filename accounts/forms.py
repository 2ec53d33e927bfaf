"""Forms of the account, team, bank and token pages. They parse input only;
the rules live in accounts.services."""

from __future__ import annotations

from django import forms
from django.contrib.auth import get_user_model
from django.contrib.auth.forms import UserCreationForm
from django.utils import timezone

from accounts.models import MAX_TOP_K, Bank, Role, Scope
from accounts.services import BANK_SETTINGS
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


class BankCreateForm(forms.ModelForm):
    class Meta:
        model = Bank
        fields = ["name", "description", "retrieval_mode", "top_k"]
        widgets = {"description": forms.Textarea(attrs={"rows": 2})}


class BankSettingsForm(forms.ModelForm):
    class Meta:
        model = Bank
        fields = BANK_SETTINGS  # the one list the service validates and audits
        widgets = {"description": forms.Textarea(attrs={"rows": 2})}
        help_texts = {
            "holdout_fraction": "Share of agent retrievals answered with no memories (the holdout arm), 0–1. "
            "The Impact page compares the outcomes of both arms to show whether this bank helps.",
            "rate_limit_per_minute": "Requests per minute per token on the agent API; 0 means no limit.",
            "top_k": f"Items (or experiences) served per retrieval, 1–{MAX_TOP_K}.",
            "min_similarity": "Cosine similarity below which nothing is served (-1 to 1).",
        }

    def clean_top_k(self):
        value = self.cleaned_data["top_k"]
        if not 1 <= value <= 50:
            raise forms.ValidationError("Between 1 and 50.")
        return value

    def clean_min_similarity(self):
        value = self.cleaned_data["min_similarity"]
        if not -1 <= value <= 1:
            raise forms.ValidationError("Between -1 and 1.")
        return value

    def clean_holdout_fraction(self):
        value = self.cleaned_data["holdout_fraction"]
        if not 0 <= value <= 1:
            raise forms.ValidationError("Between 0 and 1.")
        return value


class TokenForm(forms.Form):
    name = forms.CharField(max_length=120, help_text="Which agent uses it, e.g. 'web-agent prod'.")
    scopes = forms.MultipleChoiceField(
        choices=Scope.choices, widget=forms.CheckboxSelectMultiple, initial=[Scope.RETRIEVE, Scope.INGEST]
    )
    expires_at = BoundedDateTimeField(
        required=False,
        widget=forms.DateTimeInput(attrs={"type": "datetime-local"}, format="%Y-%m-%dT%H:%M"),
        help_text="Optional; UTC. Empty: never expires.",
    )

    def clean_expires_at(self):
        value = self.cleaned_data["expires_at"]
        if value is not None and value <= timezone.now():
            raise forms.ValidationError("The expiry must be in the future.")
        return value


class AuditFilterForm(forms.Form):
    action = forms.CharField(required=False)
    actor = forms.CharField(required=False, help_text="Username or token prefix")
    object = forms.CharField(required=False, help_text="Object id, type or name")
    since = BoundedDateField(required=False, widget=forms.DateInput(attrs={"type": "date"}))
    until = BoundedDateField(required=False, widget=forms.DateInput(attrs={"type": "date"}))
