"""Forms of the task-set pages: build a set from a trajectory filter, or upload one as JSON Lines."""

from __future__ import annotations

from django import forms

from reasoningbank_site.formfields import agent_select
from trajectories.evaluation.models import TASK_SET_NAME_MAX
from trajectories.evaluation.taskset_lines import UPLOAD_MAX_BYTES
from trajectories.evaluation.tasksets import DESCRIPTION_MAX, LIMIT_DEFAULT, LIMIT_MAX


class TaskSetNameFields(forms.Form):
    name = forms.CharField(max_length=TASK_SET_NAME_MAX, widget=forms.TextInput(attrs={"placeholder": "e.g. checkout"}))
    description = forms.CharField(required=False, max_length=DESCRIPTION_MAX, widget=forms.TextInput())


class TaskSetFilterForm(TaskSetNameFields):
    """The trajectory filter a task set is built from (tasksets.task_set_filters_clean's fields)."""

    outcome = forms.ChoiceField(
        required=False, choices=[("", "success or failure"), ("success", "success"), ("failure", "failure")]
    )
    agent = forms.CharField(required=False, max_length=200)
    text = forms.CharField(
        required=False,
        max_length=200,
        label="Search",
        widget=forms.TextInput(attrs={"type": "search", "placeholder": "task, answer or task id"}),
    )
    date_from = forms.DateField(required=False, label="From", widget=forms.DateInput(attrs={"type": "date"}))
    date_to = forms.DateField(required=False, label="To", widget=forms.DateInput(attrs={"type": "date"}))
    limit = forms.IntegerField(min_value=1, max_value=LIMIT_MAX, initial=LIMIT_DEFAULT, label="At most (tasks)")
    any_verdict = forms.BooleanField(
        required=False,
        label="Include outcomes no human reviewed",
        help_text="Off: only trajectories whose verdict a reviewer gave or confirmed (the judge is wrong often enough).",
    )

    def __init__(self, *args, agents=tuple, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["agent"].widget = agent_select(agents)

    def filters(self) -> dict:
        data = self.cleaned_data
        return {
            "outcome": data.get("outcome") or "",
            "agent": data.get("agent") or "",
            "text": data.get("text") or "",
            "date_from": data["date_from"].isoformat() if data.get("date_from") else "",
            "date_to": data["date_to"].isoformat() if data.get("date_to") else "",
            "limit": data.get("limit") or LIMIT_DEFAULT,
            "any_verdict": bool(data.get("any_verdict")),
        }


class TaskSetUploadForm(TaskSetNameFields):
    file = forms.FileField(
        help_text=(
            'One task per line: {"id": "q1", "task": "…", "metadata": {…}, '
            '"check": {"type": "contains" | "equals" | "regex", "value": "…"}, "task_id": "…"}. '
            f"At most 2,000 tasks and {UPLOAD_MAX_BYTES // (1024 * 1024)} MiB."
        )
    )

    def clean_file(self) -> bytes:
        upload = self.cleaned_data["file"]
        if upload.size > UPLOAD_MAX_BYTES:
            raise forms.ValidationError(f"The file is {upload.size:,} bytes; the limit is {UPLOAD_MAX_BYTES:,}.")
        return upload.read()
