"""Forms of the trajectory pages."""

from django import forms

from reasoningbank_site.formfields import agent_select
from reasoningbank_site.text import prompt_version_label
from trajectories.judging.models import PromptName, PromptVersion
from trajectories.models import Label, Status
from trajectories.prompts import MAX_PROMPT_CHARS, prompt_problems


class TrajectoryFilterForm(forms.Form):
    q = forms.CharField(
        required=False,
        max_length=200,
        label="Search",
        widget=forms.TextInput(attrs={"type": "search", "placeholder": "task, answer or task id"}),
    )
    status = forms.ChoiceField(required=False, choices=[("", "any status"), *Status.choices])
    verdict = forms.ChoiceField(
        required=False,
        choices=[("", "any verdict"), *Label.choices, ("none", "no verdict yet")],
    )
    agent = forms.CharField(required=False, max_length=200)
    disagree = forms.BooleanField(required=False, label="Agent and judge disagree")

    def __init__(self, *args, agents=tuple, **kwargs):
        """``agents``: a callable giving the dropdown's agent names (called only to render it)."""
        super().__init__(*args, **kwargs)
        self.fields["agent"].widget = agent_select(agents)

    def filters(self) -> dict:
        self.is_valid()  # invalid fields are simply left out of cleaned_data
        data = getattr(self, "cleaned_data", {})
        return {
            "text": data.get("q") or "",
            "status": data.get("status") or "",
            "verdict": data.get("verdict") or "",
            "agent": data.get("agent") or "",
            "disagree": bool(data.get("disagree")),
        }


class RelabelForm(forms.Form):
    label = forms.ChoiceField(choices=Label.choices, widget=forms.RadioSelect)
    reason = forms.CharField(
        required=False,
        max_length=2000,
        widget=forms.Textarea(attrs={"rows": 2, "placeholder": "why (optional): helps the next judge prompt"}),
    )


class PromptForm(forms.Form):
    """A new version of one prompt; the rules are trajectories.prompts.prompt_problems
    (the service applies them again)."""

    text = forms.CharField(
        max_length=MAX_PROMPT_CHARS, strip=False, widget=forms.Textarea(attrs={"rows": 24, "class": "mono"})
    )
    note = forms.CharField(
        required=False, max_length=200, help_text="What changed and why, e.g. 'stricter about unverified claims'."
    )
    # Off by default: an edit replaces the live judge only when asked, after an experiment compared the two.
    activate = forms.BooleanField(
        required=False,
        initial=False,
        label="Use it now",
        help_text="Leave unticked to save a candidate and compare it with the one in use in an experiment first.",
    )

    def __init__(self, *args, name: str, **kwargs):
        super().__init__(*args, **kwargs)
        self.name = name

    def clean_text(self):
        text = self.cleaned_data["text"].replace("\r\n", "\n")
        problems = prompt_problems(self.name, text)
        if problems:
            raise forms.ValidationError(problems)
        return text


class ExperimentForm(forms.Form):
    candidate_prompt = forms.ModelChoiceField(
        queryset=PromptVersion.objects.none(),
        required=False,
        label="Judge prompt",
        empty_label="The default file",
    )
    candidate_model = forms.CharField(
        required=False, max_length=120, label="Model", help_text="Empty: the service default (RB_LLM_MODEL)."
    )
    candidate_few_shot = forms.BooleanField(required=False, label="Show reviewers' decisions as examples (few-shot)")

    def __init__(self, *args, bank, **kwargs):
        super().__init__(*args, **kwargs)
        field = self.fields["candidate_prompt"]
        field.queryset = PromptVersion.objects.filter(bank=bank, name=PromptName.JUDGE).order_by("-number")
        field.label_from_instance = lambda v: (
            f"{prompt_version_label(v.version)}{' (active)' if v.is_active else ''} {v.note}".strip()
        )
        field.to_field_name = "public_id"
