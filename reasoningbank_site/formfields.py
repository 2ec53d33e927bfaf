"""Form fields whose every valid value the rest of the code can compute with."""

from __future__ import annotations

import datetime
from collections.abc import Callable, Iterable
from functools import cache

from django import forms
from django.utils.choices import CallableChoiceIterator
from django.utils.html import conditional_escape
from django.utils.safestring import SafeString, mark_safe

from reasoningbank_site.text import has_control_chars

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
    """A DateTimeField with the same range as BoundedDateField."""

    def validate(self, value):
        super().validate(value)
        if value is not None and not MIN_DATE <= value.date() <= MAX_DATE:
            raise forms.ValidationError(
                f"Pick a date between {MIN_DATE:%Y-%m-%d} and {MAX_DATE:%Y-%m-%d}.", code="date_range"
            )


def agent_select(agents: Callable[[], Iterable[str]]) -> forms.Select:
    """The "any agent" dropdown of a list's filters. ``agents()`` (a query) is
    called when the dropdown renders, not when the form filters: the htmx list
    that typing in the search box fetches has no dropdown to fill."""
    choices = cache(lambda: [("", "any agent"), *((a, a) for a in agents())])  # rendering iterates them twice
    return PlainSelect(choices=CallableChoiceIterator(choices))


# --- widgets printed by Python ---------------------------------------------------
# The list filter forms render on every page view: through Django's templates (an include per attribute list and
# per option) the review queue's seven filter widgets and five labels cost ~2.5 ms a page, a tenth of the page.
# These print the same HTML as django/forms/widgets/{input,select,select_option,attrs}.html and
# django/forms/label.html, byte for byte (the renderer strips its output; each included option keeps its
# template's final newline), from the same context.


def _attrs_html(attrs: dict) -> str:
    """django/forms/widgets/attrs.html: `` name="value"``, ``True`` as a bare name, ``False`` left out."""
    return "".join(
        f" {conditional_escape(name)}"
        if value is True
        else f' {conditional_escape(name)}="{conditional_escape(value)}"'
        for name, value in attrs.items()
        if value is not False
    )


class PlainInputMixin:
    """An input widget (text, search, date, checkbox) printed by Python, as django/forms/widgets/input.html."""

    def render(self, name, value, attrs=None, renderer=None) -> SafeString:
        widget = self.get_context(name, value, attrs)["widget"]
        shown = "" if widget["value"] is None else f' value="{conditional_escape(widget["value"])}"'
        return mark_safe(
            f'<input type="{conditional_escape(widget["type"])}" name="{conditional_escape(widget["name"])}"'
            f"{shown}{_attrs_html(widget['attrs'])}>"
        )


class PlainTextInput(PlainInputMixin, forms.TextInput):
    pass


class PlainDateInput(PlainInputMixin, forms.DateInput):
    pass


class PlainCheckboxInput(PlainInputMixin, forms.CheckboxInput):
    pass


class PlainLabelsMixin:
    """A form whose label tags are printed by Python, as django/forms/label.html (and attrs.html)."""

    def render(self, template_name=None, context=None, renderer=None) -> SafeString:
        if template_name != self.template_name_label or renderer is not None:
            return super().render(template_name, context, renderer)
        label = conditional_escape(context["label"])
        if not context["use_tag"]:
            return mark_safe(label.strip())  # the renderer strips its output
        tag = conditional_escape(context["tag"])
        return mark_safe(f"<{tag}{_attrs_html(context['attrs'] or {})}>{label}</{tag}>")


class PlainSelect(forms.Select):
    """A dropdown printed by Python, as django/forms/widgets/select.html and select_option.html."""

    def render(self, name, value, attrs=None, renderer=None) -> SafeString:
        widget = self.get_context(name, value, attrs)["widget"]
        parts = [f'<select name="{conditional_escape(widget["name"])}"{_attrs_html(widget["attrs"])}>']
        for group_name, options, _index in widget["optgroups"]:
            if group_name:
                parts.append(f'\n  <optgroup label="{conditional_escape(group_name)}">')
            parts.extend(
                f'\n  <option value="{conditional_escape(option["value"])}"{_attrs_html(option["attrs"])}>'
                f"{conditional_escape(option['label'])}</option>\n"
                for option in options
            )
            if group_name:
                parts.append("\n  </optgroup>")
        parts.append("\n</select>")
        return mark_safe("".join(parts))


def validate_one_line(value: str) -> None:
    """Names end up in email subjects and headers: no CR, LF or other control characters."""
    if value and has_control_chars(value):
        raise forms.ValidationError("Use a single line of text (no line breaks or control characters).")
