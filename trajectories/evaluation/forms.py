"""The form that starts an evaluation run from the bank's evaluation page. It only reads what was typed;
the rules (arms, the candidate release, k, the budget) are evaluation_create's, whose refusals the view
shows on the form."""

from __future__ import annotations

from django import forms

from trajectories.evaluation.models import TRIES_MAX, TRIES_MIN, ArmKind, TaskSet

DEFAULT_ARMS = [ArmKind.CANDIDATE, ArmKind.PRODUCTION, ArmKind.CONTROL]


class RunCreateForm(forms.Form):
    task_set = forms.ModelChoiceField(
        queryset=TaskSet.objects.none(), to_field_name="public_id", empty_label=None, label="Task set"
    )
    arms = forms.MultipleChoiceField(
        choices=ArmKind.choices,
        widget=forms.CheckboxSelectMultiple,
        initial=DEFAULT_ARMS,
        help_text="The candidate is the release chosen below; production is the release agents get now, pinned "
        "when the run starts; the same-budget control gets no memories and their tokens as extra budget.",
    )
    release = forms.TypedChoiceField(
        coerce=int, empty_value=None, required=False, label="Candidate release", choices=[("", "—")]
    )
    k = forms.IntegerField(
        min_value=TRIES_MIN,
        max_value=TRIES_MAX,
        initial=3,
        label="Tries per task (k)",
        help_text=f"{TRIES_MIN} to {TRIES_MAX}; pass^k needs k ≥ 2.",
    )
    token_budget = forms.IntegerField(
        min_value=1,
        required=False,
        label="Token budget per try",
        help_text="Optional: the tokens each try may spend, handed to your agent (the control gets more).",
    )
    note = forms.CharField(max_length=500, required=False, label="Note")

    def __init__(self, *args, bank, releases, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["task_set"].queryset = TaskSet.objects.filter(bank=bank).order_by("name")
        self.fields["release"].choices = [("", "—")] + [
            (r.number, f"#{r.number}" + (f" · {r.note}" if r.note else "")) for r in releases
        ]
        if releases and not self.is_bound:
            self.initial.setdefault("release", releases[0].number)
