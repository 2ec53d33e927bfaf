"""Every field of every settings page (bank settings, learning, review policy, trust) is labelled for
people: no label is the field's name with its underscores turned into spaces, and each field says what
it does (help text) unless its label says it all."""

from __future__ import annotations

import re
from html import unescape

import pytest
from django.forms.utils import pretty_name
from django.urls import reverse

from accounts.teams.forms import BankSettingsForm
from memories.review.policy_forms import BankLearningForm, ReviewPolicyForm, TrustPolicyForm, UndoSinceForm

SETTINGS_FORMS = [BankSettingsForm, BankLearningForm, ReviewPolicyForm, TrustPolicyForm, UndoSinceForm]
# Fields whose label is the whole story.
SELF_EXPLANATORY = {"name", "description", "since"}
SETTINGS_PAGES = ["accounts:bank_settings", "memories:bank_learning", "memories:review_policy", "memories:trust"]


def _auto_label(name: str) -> str:
    return pretty_name(name).lower()


@pytest.mark.parametrize("form_class", SETTINGS_FORMS, ids=lambda f: f.__name__)
def test_no_settings_field_is_labelled_with_its_field_name(form_class, bank):
    form = form_class(instance=bank) if form_class is BankSettingsForm else form_class()
    named = {name: form[name].label for name in form.fields if form[name].label.lower() == _auto_label(name)}
    assert named == {}, f"labels that are field names: {named}"


@pytest.mark.parametrize("form_class", SETTINGS_FORMS, ids=lambda f: f.__name__)
def test_every_settings_field_says_what_it_does(form_class, bank):
    form = form_class(instance=bank) if form_class is BankSettingsForm else form_class()
    silent = [name for name in form.fields if name not in SELF_EXPLANATORY and not form[name].help_text]
    assert silent == []


@pytest.mark.parametrize("page", SETTINGS_PAGES)
def test_no_settings_page_shows_a_field_name_as_a_label(page, client, owner, bank):
    client.force_login(owner)
    html = client.get(reverse(page, kwargs={"bank_id": bank.public_id})).content.decode()
    labels = [
        unescape(re.sub(r"<[^>]+>", "", text)).strip() for text in re.findall(r"<label[^>]*>(.*?)</label>", html, re.S)
    ]
    names = set(re.findall(r'name="([a-z_]+)"', html)) - {"csrfmiddlewaretoken"}
    assert labels, "the page shows no labelled field"
    assert [label for label in labels if label.lower() in {_auto_label(n) for n in names}] == []
