"""Forms of the review pages: they parse and validate; services do the work."""

import json
import re
import uuid

from django import forms

from accounts.models import MAX_TOP_K
from memories.items.models import TAG_MAX_LENGTH, TAGS_MAX, ItemOrigin, ItemStatus, MemoryItem, normalize_tags
from memories.learning.selectors import LifecycleState
from memories.review import collaboration_reads as collab
from memories.review.selectors import QUEUE_SORTS
from memories.serving import RetrievalFilters
from reasoningbank_site.formfields import BoundedDateField, FlatSelect, agent_select
from reasoningbank_site.text import scrub_text

VERDICT_CHOICES = [("", "any verdict"), ("success", "success"), ("failure", "failure")]


class ReviewFilterForm(forms.Form):
    """The queue's filters."""

    q = forms.CharField(
        required=False,
        max_length=200,
        label="Search",
        widget=forms.TextInput(attrs={"type": "search", "placeholder": "title, description, content"}),
    )
    origin = forms.ChoiceField(required=False, choices=[("", "any origin"), *ItemOrigin.choices], widget=FlatSelect)
    verdict = forms.ChoiceField(required=False, choices=VERDICT_CHOICES, widget=FlatSelect)
    agent = forms.CharField(required=False, max_length=200)
    date_from = BoundedDateField(required=False, label="From", widget=forms.DateInput(attrs={"type": "date"}))
    date_to = BoundedDateField(required=False, label="To", widget=forms.DateInput(attrs={"type": "date"}))
    dup = forms.BooleanField(required=False, label="Has near-duplicate")
    state = forms.ChoiceField(
        required=False, label="State", choices=[("", "proposed"), *LifecycleState.choices], widget=FlatSelect
    )
    disagree = forms.BooleanField(required=False, label="Agent and judge disagree")
    conflict = forms.BooleanField(required=False, label="Reviewers disagree")
    sort = forms.ChoiceField(required=False, label="Order", choices=(), widget=FlatSelect)
    risky = forms.BooleanField(required=False, label="Has risk findings")

    def __init__(self, *args, agents=tuple, **kwargs):
        """``agents``: a callable giving the dropdown's agent names (called only to render it)."""
        super().__init__(*args, **kwargs)
        self.fields["agent"].widget = agent_select(agents)
        self.fields["sort"].choices = [(key, label) for key, (label, _order) in QUEUE_SORTS.items()]

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
            "state": data.get("state") or "",
            "disagreement": bool(data.get("disagree")),
            "conflict": bool(data.get("conflict")),
            "sort": data.get("sort") or "",
            "has_risks": bool(data.get("risky")),
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


def _tags_field(**kwargs) -> forms.CharField:
    return forms.CharField(
        required=False,
        max_length=TAGS_MAX * (TAG_MAX_LENGTH + 2),
        widget=forms.TextInput(attrs={"placeholder": "e.g. checkout, auth"}),
        **kwargs,
    )


def _clean_tags(value: str) -> list[str]:
    try:
        return normalize_tags(value)
    except ValueError as exc:
        raise forms.ValidationError(f"{str(exc)[:1].upper()}{str(exc)[1:]}.") from None


class ItemEditForm(forms.ModelForm):
    tags = _tags_field(
        help_text=f"Separated by commas or spaces; lower-case letters, digits, “.”, “_”, “-”; at most {TAGS_MAX}. "
        "Agents can retrieve by tag."
    )
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

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.initial.setdefault("tags", ", ".join(self.instance.tags or []))

    def clean_tags(self) -> list[str]:
        return _clean_tags(self.cleaned_data["tags"])


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
    BAD_LINES_SHOWN = 20

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
        records, bad = [], []
        for number, line in enumerate(text.splitlines(), start=1):
            if not line.strip():
                continue
            try:
                records.append(json.loads(line))
            except ValueError as exc:
                bad.append(f"Line {number} is not valid JSON: {exc}")
            except RecursionError:
                bad.append(f"Line {number} is not valid JSON: nested too deeply.")
        if bad:
            # Every bad line, so one upload shows all there is to fix (the first BAD_LINES_SHOWN of them).
            shown = bad[: self.BAD_LINES_SHOWN]
            if len(bad) > len(shown):
                shown.append(f"… and {len(bad) - len(shown)} more bad lines.")
            raise forms.ValidationError(shown)
        return scrub_text(records)


class RejectForm(forms.Form):
    reason = forms.CharField(
        max_length=2000, widget=forms.TextInput(attrs={"placeholder": "why it should not be served"})
    )


class MergeForm(forms.Form):
    into = forms.UUIDField()
    note = forms.CharField(required=False, max_length=2000)  # a form field, so NUL is refused (was read raw: a 500)


def _refuse_constant(name: str):
    raise ValueError(f"{name} is not JSON")  # NaN / Infinity: read the value as text


class PlaygroundForm(forms.Form):
    q = forms.CharField(
        label="Task",
        max_length=4000,
        widget=forms.Textarea(attrs={"rows": 3, "placeholder": "Describe a task as an agent would send it"}),
    )
    k = forms.IntegerField(required=False, min_value=1, max_value=MAX_TOP_K, label="k (empty: the bank's top-k)")
    tags = _tags_field(label="Tags")
    tags_mode = forms.ChoiceField(
        required=False, choices=[("any", "any of them"), ("all", "all of them")], label="Items with"
    )
    agent = forms.CharField(
        required=False,
        max_length=2000,
        label="Agent",
        widget=forms.TextInput(attrs={"placeholder": "e.g. shop-bot/1.3 (several: comma-separated)"}),
    )
    metadata = forms.CharField(
        required=False,
        max_length=4000,
        label="Metadata (key=value, one a line)",
        widget=forms.Textarea(attrs={"rows": 2, "placeholder": "env=prod"}),
        help_text='A value is read as JSON when it parses (42, true, {"a": 1}), else as text.',
    )

    def clean_tags(self) -> list[str]:
        return _clean_tags(self.cleaned_data["tags"])

    def clean_metadata(self) -> dict:
        metadata = {}
        for number, line in enumerate(self.cleaned_data["metadata"].splitlines(), start=1):
            if not line.strip():
                continue
            key, sep, raw = line.partition("=")
            if not sep or not key.strip():
                raise forms.ValidationError(f"Line {number}: write key=value.")
            try:
                value = json.loads(raw.strip(), parse_constant=_refuse_constant)
            except (ValueError, RecursionError):
                value = raw.strip()
            metadata[key.strip()] = value
        try:
            json.dumps(metadata, allow_nan=False)
        except (ValueError, RecursionError):
            raise forms.ValidationError("A value is nested too deeply.") from None
        return scrub_text(metadata)  # a JSON "\u0000" cannot be stored

    def filters(self) -> RetrievalFilters:
        """The filter inputs as the retrieval selector's filters (call after is_valid)."""
        data = self.cleaned_data
        tags = tuple(data.get("tags") or ())
        agents = tuple(a.strip() for a in (data.get("agent") or "").split(",") if a.strip())
        return RetrievalFilters(
            tags_any=tags if data.get("tags_mode") != "all" else (),
            tags_all=tags if data.get("tags_mode") == "all" else (),
            agents=agents,
            metadata=data.get("metadata") or {},
        )


UUID_RE = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", re.IGNORECASE)


class AssignmentForm(forms.Form):
    """A slice of the review queue given to a reviewer: criteria, listed items, or both."""

    reviewer = forms.ModelChoiceField(queryset=None, empty_label="choose a reviewer")
    origin = forms.ChoiceField(required=False, choices=[("", "any origin"), *ItemOrigin.choices])
    verdict = forms.ChoiceField(required=False, choices=VERDICT_CHOICES)
    agent = forms.CharField(required=False, max_length=200)
    tag = forms.CharField(required=False, max_length=40)
    items = forms.CharField(
        required=False,
        max_length=50_000,
        label="Listed items",
        widget=forms.Textarea(attrs={"rows": 2, "placeholder": "item ids or links, one a line (optional)"}),
        help_text="These items are in the slice too, whatever the criteria.",
    )
    note = forms.CharField(required=False, max_length=200)

    def __init__(self, *args, bank, agents=(), **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["reviewer"].queryset = collab.team_reviewers(bank=bank)
        self.fields["reviewer"].label_from_instance = lambda user: user.get_username()
        self.fields["agent"].widget = forms.Select(choices=[("", "any agent"), *((a, a) for a in agents)])

    def clean_items(self) -> list[uuid.UUID]:
        """One item a line, as its id or a link to it (an item link ends with the item's id)."""
        ids = []
        for line in (self.cleaned_data["items"] or "").splitlines():
            found = UUID_RE.findall(line)
            if found:
                ids.append(uuid.UUID(found[-1]))
            elif line.strip():
                raise forms.ValidationError(f"Not an item id or link: {line.strip()[:80]}")
        return ids


class LifecycleActionForm(forms.Form):
    """The item page's lifecycle decisions (memories.learning.views)."""

    action = forms.ChoiceField(
        choices=[
            ("reopen", "Reopen"),
            ("archive-wrong", "Archive as wrong"),
            ("keep", "Keep in service"),
            ("still-holds", "Still holds"),
            ("validity", "Set validity"),
            ("supersede", "Supersede"),
        ]
    )
    note = forms.CharField(required=False, max_length=2000)
    valid_until = BoundedDateField(required=False, label="Valid until")
    replacement = forms.UUIDField(required=False)

    def clean(self):
        data = super().clean()
        if data.get("action") == "archive-wrong" and not (data.get("note") or "").strip():
            self.add_error("note", "Say why it is wrong: the reason is shown with its repeats.")
        if data.get("action") == "supersede" and not data.get("replacement"):
            self.add_error("replacement", "Give the id of the item that replaces it.")
        return data
