"""The form that adds a webhook (the rules on URL and events are the service's)."""

from __future__ import annotations

from django import forms

from accounts.webhooks.addresses import MAX_URL_LENGTH
from accounts.webhooks.events import EVENTS
from accounts.webhooks.subscriptions import DESCRIPTION_MAX


class WebhookForm(forms.Form):
    url = forms.CharField(
        label="URL",
        max_length=MAX_URL_LENGTH,
        help_text="The receiver: http:// or https://. Each delivery is a signed POST (Standard Webhooks).",
        widget=forms.TextInput(attrs={"placeholder": "https://example.com/hooks/reasoningbank"}),
    )
    events = forms.MultipleChoiceField(
        choices=[(name, f"{name} — {text}") for name, text in EVENTS.items()],
        widget=forms.CheckboxSelectMultiple,
        error_messages={"required": f"Choose at least one event: {', '.join(EVENTS)}."},
    )
    description = forms.CharField(max_length=DESCRIPTION_MAX, required=False, help_text="A label for this list.")
