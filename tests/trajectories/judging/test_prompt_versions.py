"""A bank's own prompts (trajectories.judging.prompt_versions): validation of the
placeholders and answer format, versions recorded on judgments and items,
activating and restoring the default, and the prompt editor page by role."""

from __future__ import annotations

import pytest
from django.urls import reverse

from accounts.models import AuditEvent
from memories.items.models import MemoryItem
from reasoningbank_site.errors import Invalid
from tests.factories import make_member, process_trajectory
from tests.trajectories.llm_answers import ITEMS_MD, JUDGE_FAILURE
from trajectories.judging.models import PromptVersion
from trajectories.judging.prompt_versions import (
    prompt_active,
    prompt_default_restore,
    prompt_version_activate,
    prompt_version_save,
)
from trajectories.prompts import NAMES, prompt_load, prompt_problems

pytestmark = pytest.mark.django_db


def custom(name: str, marker: str) -> str:
    """The default wording of ``name`` with a marker line on top (still valid)."""
    return f"{marker}\n" + prompt_load(name)[0]


@pytest.mark.parametrize("name", NAMES)
def test_every_default_prompt_passes_its_own_validation(name):
    assert prompt_problems(name, prompt_load(name)[0]) == []


def test_a_judge_prompt_without_the_record_or_the_json_format_is_refused(bank):
    text = prompt_load("judge")[0].replace("$trajectory", "(the record)").replace('"verdict"', "verdict")
    with pytest.raises(Invalid) as exc:
        prompt_version_save(bank=bank, name="judge", text=text)
    assert "$trajectory is missing" in exc.value.message
    assert 'must keep "verdict"' in exc.value.message
    assert not PromptVersion.objects.exists()


def test_a_distill_prompt_with_an_unknown_placeholder_or_no_item_format_is_refused(bank):
    text = prompt_load("distill_failure")[0].replace("## Description", "Description:") + "\nFor $user"
    problems = prompt_problems("distill_failure", text)
    assert any("Unknown placeholder $user" in p for p in problems)
    assert any("## Description" in p for p in problems)
    assert prompt_problems("judge", prompt_load("judge")[0] + "\ncosts $ 5") == [
        "A '$' is not followed by a placeholder name; write '$$' for a literal dollar sign."
    ]


@pytest.mark.usefixtures("eager_celery")
def test_the_pipeline_uses_and_records_the_banks_active_versions(bank, fake_llm, make_trajectory, owner):
    judge_v = prompt_version_save(bank=bank, name="judge", text=custom("judge", "JUDGE-V1-MARK"), author=owner)
    distill_v = prompt_version_save(
        bank=bank, name="distill_failure", text=custom("distill_failure", "DISTILL-MARK"), author=owner
    )
    fake_llm.reply(JUDGE_FAILURE).reply(ITEMS_MD)
    t = process_trajectory(make_trajectory())

    assert judge_v.version == f"judge@bank-{bank.pk}-v1"
    assert t.judgments.get().prompt_version == judge_v.version
    assert {i.prompt_version for i in MemoryItem.objects.filter(bank=bank)} == {distill_v.version}
    assert fake_llm.prompts[0].startswith("JUDGE-V1-MARK") and fake_llm.prompts[1].startswith("DISTILL-MARK")
    assert AuditEvent.objects.filter(action="prompt.save", bank=bank).count() == 2


@pytest.mark.usefixtures("eager_celery")
def test_a_candidate_is_not_used_until_activated_and_the_default_can_come_back(bank, fake_llm, make_trajectory):
    first = prompt_version_save(bank=bank, name="judge", text=custom("judge", "FIRST"))
    second = prompt_version_save(bank=bank, name="judge", text=custom("judge", "SECOND"), activate=False)
    assert (second.number, second.is_active) == (2, False)
    assert prompt_active(bank=bank, name="judge").version == first.version

    prompt_version_activate(version=second)
    assert prompt_active(bank=bank, name="judge").version == second.version
    assert PromptVersion.objects.filter(bank=bank, is_active=True).count() == 1

    prompt_default_restore(bank=bank, name="judge")
    fake_llm.reply(JUDGE_FAILURE).reply(ITEMS_MD)
    t = process_trajectory(make_trajectory())
    assert t.judgments.get().prompt_version == "judge/v1"
    assert PromptVersion.objects.filter(bank=bank).count() == 2  # nothing deleted


def test_versions_are_per_bank(bank, other_bank):
    mine = prompt_version_save(bank=bank, name="judge", text=custom("judge", "MINE"))
    assert prompt_active(bank=other_bank, name="judge").version == "judge/v1"
    assert prompt_version_save(bank=other_bank, name="judge", text=custom("judge", "THEIRS")).number == 1
    assert prompt_active(bank=bank, name="judge").text.startswith("MINE") and mine.is_active


# --- the editor page -------------------------------------------------------------------------


def edit_url(bank, name="judge"):
    return reverse("trajectories:prompt_edit", kwargs={"bank_id": bank.public_id, "name": name})


def test_admin_saves_a_version_and_sees_it_in_use_with_its_diff(client, bank, owner):
    client.force_login(owner)
    text = custom("judge", "Be extra careful with totals.")
    response = client.post(edit_url(bank), {"text": text, "note": "totals", "activate": "on"}, follow=True)
    page = response.content.decode()
    assert response.status_code == 200
    assert '<code id="in-use">judge v1 (custom)</code>' in page
    assert f"bank-{bank.pk}" not in page  # no internal id in a version's name
    assert '<span class="diff-added">+ Be extra careful with totals.</span>' in page
    assert PromptVersion.objects.get(bank=bank).note == "totals"


def test_use_it_now_is_off_by_default_and_a_saved_candidate_suggests_an_experiment(client, bank, owner):
    client.force_login(owner)
    assert 'name="activate" id="id_activate" checked' not in client.get(edit_url(bank)).content.decode()
    text = custom("judge", "Be extra careful with totals.")
    page = client.post(edit_url(bank), {"text": text, "note": "totals"}, follow=True).content.decode()
    assert "Saved judge v1 (custom) as a candidate, not in use." in page and "in an experiment" in page
    assert not PromptVersion.objects.get(bank=bank).is_active


def test_an_invalid_prompt_re_renders_with_clear_errors_and_saves_nothing(client, bank, owner):
    client.force_login(owner)
    response = client.post(edit_url(bank), {"text": "Judge it: $trajectory", "activate": "on"})
    page = response.content.decode()
    assert response.status_code == 200
    assert "The answer format instruction must keep &quot;verdict&quot;" in page
    assert not PromptVersion.objects.exists()


def test_unknown_prompt_name_is_404(client, bank, owner):
    client.force_login(owner)
    assert client.get(edit_url(bank, "nonsense")).status_code == 404


@pytest.mark.parametrize("role", ["reviewer", "viewer"])
def test_below_admin_reads_but_cannot_save(client, bank, team, role):
    client.force_login(make_member(team, role))
    assert client.get(edit_url(bank)).status_code == 200
    response = client.post(edit_url(bank), {"text": custom("judge", "X"), "activate": "on"})
    assert response.status_code == 403
    assert not PromptVersion.objects.exists()


def test_another_teams_member_gets_404_and_anonymous_is_sent_to_login(client, bank, stranger):
    client.force_login(stranger)
    assert client.get(edit_url(bank)).status_code == 404
    assert client.post(edit_url(bank), {"text": custom("judge", "X")}).status_code == 404
    client.logout()
    assert client.get(edit_url(bank)).status_code == 302
    assert not PromptVersion.objects.exists()


def test_use_a_saved_version_and_the_default_from_the_page(client, bank, owner):
    v1 = prompt_version_save(bank=bank, name="judge", text=custom("judge", "ONE"))
    prompt_version_save(bank=bank, name="judge", text=custom("judge", "TWO"))
    client.force_login(owner)
    use = reverse(
        "trajectories:prompt_activate", kwargs={"bank_id": bank.public_id, "name": "judge", "version_id": v1.public_id}
    )
    assert client.post(use).status_code == 302
    assert prompt_active(bank=bank, name="judge").version == v1.version
    default = reverse(
        "trajectories:prompt_activate", kwargs={"bank_id": bank.public_id, "name": "judge", "version_id": "default"}
    )
    client.post(default)
    assert prompt_active(bank=bank, name="judge").version == "judge/v1"
    bogus = reverse(
        "trajectories:prompt_activate", kwargs={"bank_id": bank.public_id, "name": "judge", "version_id": "nope"}
    )
    assert client.post(bogus).status_code == 404
