"""The list filter forms' widgets and labels printed by Python (reasoningbank_site.formfields) print what Django's
templates print, byte for byte: escaping, selected options, groups, bare and omitted attributes, dates, checkboxes."""

import datetime

from django import forms
from django.utils.safestring import mark_safe

from reasoningbank_site.formfields import (
    PlainCheckboxInput,
    PlainDateInput,
    PlainLabelsMixin,
    PlainSelect,
    PlainTextInput,
)

ATTRS = [None, {"id": "id_x"}, {"id": 'x"<y>', "required": True, "disabled": False, "data-n": 3}]


def test_plain_select_prints_what_the_template_prints():
    choices = [
        ("", "any <x>"),
        ("a&b", 'A "q" & <b>'),
        (1, mark_safe("<i>safe</i>")),
        ("g", [("g1", "G1"), ("g2", "G<2>")]),
    ]
    for value in [None, "", "a&b", "1", "g2", "missing", ["a&b"]]:
        for attrs in ATTRS:
            django = forms.Select(choices=choices).render("na<me", value, attrs)
            assert PlainSelect(choices=choices).render("na<me", value, attrs) == django


def test_plain_inputs_print_what_the_template_prints():
    cases = [
        (forms.TextInput, PlainTextInput, [None, "", 'x"<y>&', 5, mark_safe("<b>")]),
        (forms.DateInput, PlainDateInput, [None, "", datetime.date(2024, 1, 2), "2024-13-99"]),
        (forms.CheckboxInput, PlainCheckboxInput, [None, "", True, False, "on"]),
    ]
    for django_widget, plain_widget, values in cases:
        for widget_attrs in [None, {"type": "search", "placeholder": 'a "b" <c>', "maxlength": 200}]:
            for value in values:
                for attrs in ATTRS:
                    django = django_widget(attrs=widget_attrs).render("q", value, attrs)
                    assert plain_widget(attrs=widget_attrs).render("q", value, attrs) == django


class _Form(forms.Form):
    a = forms.CharField(label="Search")
    b = forms.CharField(label="Why?", required=False)
    c = forms.CharField(label=mark_safe("<b>x</b>"), widget=forms.TextInput(attrs={"id": "own"}))
    d = forms.CharField(label="A & <b>", required=False)


class _PlainForm(PlainLabelsMixin, _Form):
    pass


def test_plain_labels_print_what_the_template_prints():
    for kwargs in [{}, {"auto_id": False}, {"label_suffix": " &"}]:
        django, plain = _Form(**kwargs), _PlainForm(**kwargs)
        for name in "abcd":
            for args in [
                {},
                {"attrs": {"class": "x<", "hidden": True, "no": False}},
                {"tag": "span"},
                {"contents": " p "},
            ]:
                assert plain[name].label_tag(**args) == django[name].label_tag(**args)
        assert str(plain) == str(django)  # the whole form (its template's own label tags) too
