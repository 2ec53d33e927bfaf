"""Forms of the trajectory pages."""

from django import forms

from trajectories.models import Label, Status


class TrajectoryFilterForm(forms.Form):
    q = forms.CharField(
        required=False,
        max_length=200,
        label="Search",
        widget=forms.TextInput(attrs={"type": "search", "placeholder": "task, answer or task id"}),
    )
    status = forms.ChoiceField(required=False, choices=[("", "any status"), *Status.choices])
    verdict = forms.ChoiceField(
        required=False, choices=[("", "any verdict"), *Label.choices, ("none", "no verdict yet")]
    )
    agent = forms.CharField(required=False, max_length=200)

    def __init__(self, *args, agents=(), **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["agent"].widget = forms.Select(choices=[("", "any agent"), *((a, a) for a in agents)])

    def filters(self) -> dict:
        self.is_valid()  # invalid fields are simply left out of cleaned_data
        data = getattr(self, "cleaned_data", {})
        return {
            "text": data.get("q") or "",
            "status": data.get("status") or "",
            "verdict": data.get("verdict") or "",
            "agent": data.get("agent") or "",
        }


class RelabelForm(forms.Form):
    label = forms.ChoiceField(choices=Label.choices, widget=forms.RadioSelect)
    reason = forms.CharField(
        max_length=2000, widget=forms.Textarea(attrs={"rows": 2, "placeholder": "why the verdict is wrong"})
    )
