"""Form fields whose every valid value the rest of the code can compute with."""

from __future__ import annotations

import datetime
from collections.abc import Callable, Iterable
from functools import cache

from django import forms
from django.utils.choices import CallableChoiceIterator

from reasoningbank_site.text import has_control_chars
from reasoningbank_site.values import moment_problem

# Code adds a day to an "until" date and converts dates to aware datetimes;
# year 9999 overflowed (a 500). No real filter or expiry needs dates outside this range.
MIN_DATE = datetime.date(1900, 1, 1)
MAX_DATE = datetime.date(9000, 12, 31)


class BoundedDateField(forms.DateField):
    """A DateField refusing dates before 1900 or after 9000 with a form error."""

    def validate(self, value):
        super().validate(value)
        if value is not None and not MIN_DATE <= value <= MAX_DATE:
            raise forms.ValidationError(
                f"Pick a date between {MIN_DATE:%Y-%m-%d} and {MAX_DATE:%Y-%m-%d}.", code="date_range"
            )


class BoundedDateTimeField(forms.DateTimeField):
    """A DateTimeField with the same range as BoundedDateField, refusing a typed
    UTC offset PostgreSQL cannot store (reasoningbank_site.values.moment_problem)."""

    def validate(self, value):
        super().validate(value)
        if value is not None and not MIN_DATE <= value.date() <= MAX_DATE:
            raise forms.ValidationError(
                f"Pick a date between {MIN_DATE:%Y-%m-%d} and {MAX_DATE:%Y-%m-%d}.", code="date_range"
            )
        problem = value is not None and moment_problem(value)
        if problem:
            raise forms.ValidationError(f"Pick another moment: {problem}.", code="date_range")


class FlatSelect(forms.Select):
    """Django's Select, its options written in place rather than each through an include
    (widgets/flat_select.html): same HTML, and a long list renders in a fraction of the time."""

    template_name = "widgets/flat_select.html"


def agent_select(agents: Callable[[], Iterable[str]]) -> forms.Select:
    """The "any agent" dropdown of a list's filters. ``agents()`` (a query) is
    called when the dropdown renders, not when the form filters: the htmx list
    that typing in the search box fetches has no dropdown to fill."""
    choices = cache(lambda: [("", "any agent"), *((a, a) for a in agents())])  # rendering iterates them twice
    return FlatSelect(choices=CallableChoiceIterator(choices))


def validate_one_line(value: str) -> None:
    """Names end up in email subjects and headers: no CR, LF or other control characters."""
    if value and has_control_chars(value):
        raise forms.ValidationError("Use a single line of text (no line breaks or control characters).")
