"""Forms of the review pages: they parse and validate; services do the work."""

import json
import uuid

from django import forms

from accounts.models import MAX_TOP_K
from memories.models import ItemOrigin, ItemStatus, MemoryItem
from reasoningbank_site.formfields import BoundedDateField
from reasoningbank_site.text import scrub_text

VERDICT_CHOICES = [("", "any verdict"), ("success", "success"), ("failure", "failure")]


class ReviewFilterForm(forms.Form):
    q = forms.CharField(
        required=False,
        max_length=200,
        label="Search",
        widget=forms.TextInput(attrs={"type": "search", "placeholder": "title, description, content"}),
    )
    origin = forms.ChoiceField(required=False, choices=[("", "any origin"), *ItemOrigin.choices])
    verdict = forms.ChoiceField(required=False, choices=VERDICT_CHOICES)
    agent = forms.CharField(required=False, max_length=200)
    date_from = BoundedDateField(required=False, label="From", widget=forms.DateInput(attrs={"type": "date"}))
    date_to = BoundedDateField(required=False, label="To", widget=forms.DateInput(attrs={"type": "date"}))
    dup = forms.BooleanField(required=False, label="Has near-duplicate")

    def __init__(self, *args, agents=(), **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["agent"].widget = forms.Select(choices=[("", "any agent"), *((a, a) for a in agents)])

    def filters(self) -> dict:
        """The valid filters as selector keyword arguments (invalid ones dropped)."""
        self.is_valid()  # invalid fields are simply left out of cleaned_data
        data = getattr(self, "cleaned_data", {})
        return {
            "text": data.get("q") or "",
            "origin": data.get("origin") or "",
            "verdict": data.get("verdict") or "",
            "agent": data.get("agent") or "",
            "date_from": data.get("date_from"),
            "date_to": data.get("date_to"),
            "has_duplicate": bool(data.get("dup")),
        }


class ItemListFilterForm(forms.Form):
    status = forms.ChoiceField(required=False, choices=[("", "all"), *ItemStatus.choices])
    q = forms.CharField(
        required=False,
        max_length=200,
        label="Search",
        widget=forms.TextInput(attrs={"type": "search", "placeholder": "title, description, content"}),
    )


class BulkActionForm(forms.Form):
    action = forms.ChoiceField(choices=[("approve", "Approve"), ("reject", "Reject")])
    items = forms.CharField(required=False)  # replaced by a multi-value field in clean()
    reason = forms.CharField(required=False, max_length=2000)

    def __init__(self, data=None, *args, **kwargs):
        super().__init__(data, *args, **kwargs)
        self._ids = data.getlist("items") if data is not None and hasattr(data, "getlist") else []

    def clean(self):
        cleaned = super().clean()
        ids = []
        for raw in self._ids:
            try:
                ids.append(uuid.UUID(str(raw)))
            except ValueError:
                continue
        if not ids:
            raise forms.ValidationError("Select at least one item.")
        if len(ids) > 500:
            raise forms.ValidationError("At most 500 items at once.")
        cleaned["items"] = ids
        return cleaned


class ItemEditForm(forms.ModelForm):
    note = forms.CharField(
        required=False,
        max_length=500,
        label="Note (why this change)",
        widget=forms.TextInput(attrs={"placeholder": "optional"}),
    )

    class Meta:
        model = MemoryItem
        fields = ["title", "description", "content"]
        widgets = {
            "description": forms.Textarea(attrs={"rows": 2}),
            "content": forms.Textarea(attrs={"rows": 4}),
        }
        help_texts = {
            "description": "One sentence: when to use it (or when not to).",
            "content": "1–3 sentences of actionable, general insight. No site names or literal strings from the task.",
        }


class ItemCreateForm(ItemEditForm):
    """A memory written by hand. Reviewers may approve it at once."""

    approve_now = forms.BooleanField(required=False, label="Approve now (serve it to agents at once)")

    class Meta(ItemEditForm.Meta):
        pass

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        del self.fields["note"]


class ImportForm(forms.Form):
    MAX_BYTES = 2 * 1024 * 1024

    file = forms.FileField(
        help_text="A bank's export (JSON Lines), or a JSON array of objects with title, description and content. At most 2 MiB.",
    )

    def clean_file(self):
        """The parsed records; a parse error names its line."""
        upload = self.cleaned_data["file"]
        if upload.size > self.MAX_BYTES:
            raise forms.ValidationError(f"The file is {upload.size} bytes; the limit is {self.MAX_BYTES}.")
        try:
            text = upload.read().decode("utf-8-sig")
        except UnicodeDecodeError:
            raise forms.ValidationError("The file is not UTF-8 text.") from None
        stripped = text.strip()
        if stripped.startswith("["):
            try:
                return scrub_text(json.loads(stripped))  # NUL / lone surrogates (legal JSON) cannot be stored
            except ValueError as exc:
                raise forms.ValidationError(f"Not valid JSON: {exc}") from None
            except RecursionError:
                raise forms.ValidationError("Not valid JSON: nested too deeply.") from None
        records = []
        for number, line in enumerate(text.splitlines(), start=1):
            if not line.strip():
                continue
            try:
                records.append(json.loads(line))
            except ValueError as exc:
                raise forms.ValidationError(f"Line {number} is not valid JSON: {exc}") from None
            except RecursionError:
                raise forms.ValidationError(f"Line {number} is not valid JSON: nested too deeply.") from None
        return scrub_text(records)


class RejectForm(forms.Form):
    reason = forms.CharField(
        max_length=2000, widget=forms.TextInput(attrs={"placeholder": "why it should not be served"})
    )


class MergeForm(forms.Form):
    into = forms.UUIDField()
    note = forms.CharField(required=False, max_length=2000)  # a form field, so NUL is refused (was read raw: a 500)


class PlaygroundForm(forms.Form):
    q = forms.CharField(
        label="Task",
        max_length=4000,
        widget=forms.Textarea(attrs={"rows": 3, "placeholder": "Describe a task as an agent would send it"}),
    )
    k = forms.IntegerField(required=False, min_value=1, max_value=MAX_TOP_K, label="k (empty: the bank's top-k)")
