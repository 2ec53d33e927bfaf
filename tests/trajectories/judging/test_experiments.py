"""Experiments (trajectories.judging.experiments): the fake LLM answers differently
per prompt version, so each judge's agreement with the reviewers is known in
advance; the held-out split, resuming, failing, promoting; the Judge page by
role; and the dashboard's agreement and distillation per version."""

from __future__ import annotations

import itertools
import re
from types import SimpleNamespace

import pytest
from django.urls import reverse

from accounts.models import AuditEvent
from memories.items.services import memory_item_edit
from memories.review.decisions import memory_item_approve, memory_item_reject
from memories.trust.services import bank_trust_policy_update
from reasoningbank_site.errors import Conflict, Invalid
from tests.factories import make_member, propose_item, record_verdict
from tests.fake_llm import Scripted
from trajectories.dashboard.selectors import distill_outcomes_by_version, judge_agreement_by_version
from trajectories.judging.experiments import arm_result, experiment_promote, experiment_run, experiment_start
from trajectories.judging.few_shot import in_holdout
from trajectories.judging.models import Experiment, ExperimentStatus
from trajectories.judging.prompt_versions import prompt_active, prompt_version_save
from trajectories.models import JudgmentSource
from trajectories.prompts import prompt_load

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("eager_celery")]

CANDIDATE_MARK = "CANDIDATE-STRICT"
_seq = itertools.count()


def task_id(*, held_out: bool) -> str:
    while True:
        candidate = f"exp-task-{next(_seq)}"
        if in_holdout(SimpleNamespace(task_id=candidate)) == held_out:
            return candidate


def verdict(label: str) -> str:
    return f'{{"verdict": "{label}", "rationale": "scripted"}}'


def judge_by_version(messages) -> str:
    """The default judge says success to everything; the candidate (its
    prompt carries CANDIDATE_MARK) reads the record and fails the runs whose
    answer says WRONG — so it agrees with the reviewers every time."""
    prompt = messages[-1]["content"]
    if CANDIDATE_MARK not in prompt:
        return verdict("success")
    record = prompt[prompt.index("<trajectory>\n<task>") :]
    return verdict("failure" if "WRONG" in record else "success")


def labelled(make_trajectory, human: str, *, held_out: bool = True):
    answer = "WRONG: the hours were guessed." if human == "failure" else "Sundays 12:00-17:00."
    t = make_trajectory(task_id=task_id(held_out=held_out), final_answer=answer, status="done")
    record_verdict(t, "success")
    record_verdict(t, human, source=JudgmentSource.HUMAN, rationale="checked by hand")
    return t


@pytest.fixture
def cases(make_trajectory):
    """Held out: 3 reviewer successes, 2 reviewer failures; plus 2 training cases not measured."""
    held = [labelled(make_trajectory, label) for label in ("success", "failure", "success", "failure", "success")]
    labelled(make_trajectory, "failure", held_out=False)
    labelled(make_trajectory, "success", held_out=False)
    return held


@pytest.fixture
def candidate(bank, owner):
    text = f"{CANDIDATE_MARK}\n" + prompt_load("judge")[0]
    return prompt_version_save(bank=bank, name="judge", text=text, note="strict", author=owner, activate=False)


def start(bank, owner, candidate, django_capture_on_commit_callbacks, **kw) -> Experiment:
    with django_capture_on_commit_callbacks(execute=True):
        experiment = experiment_start(
            bank=bank,
            candidate_prompt=candidate,
            candidate_model=kw.get("model", ""),
            candidate_few_shot=kw.get("few_shot", False),
            author=owner,
        )
    experiment.refresh_from_db()
    return experiment


def test_an_experiments_numbers_are_the_scripted_ones(
    bank, owner, cases, candidate, fake_llm, django_capture_on_commit_callbacks
):
    fake_llm.responder = judge_by_version
    experiment = start(bank, owner, candidate, django_capture_on_commit_callbacks)

    assert experiment.status == ExperimentStatus.DONE and experiment.finished_at
    assert (experiment.total, experiment.done) == (5, 5)  # the held-out cases only
    assert set(experiment.cases) == {str(t.pk) for t in cases}
    base, cand = arm_result(experiment.cases, "baseline"), arm_result(experiment.cases, "candidate")
    assert (base.accuracy.x, base.accuracy.n) == (3, 5)
    assert (base.false_success.x, base.false_success.n) == (2, 2)
    assert (base.false_failure.x, base.false_failure.n) == (0, 3)
    assert (cand.accuracy.x, cand.accuracy.n) == (5, 5)
    assert (cand.false_success.x, cand.false_success.n) == (0, 2)
    assert base.accuracy.text == "60% [23–88%] n=5" and cand.accuracy.text == "100% [57–100%] n=5"
    assert len(fake_llm.requests) == 10
    # An experiment changes no verdict.
    assert all(t.judgments.count() == 2 for t in cases)


def test_a_rerun_judges_nothing_twice_and_a_done_experiment_is_left_alone(
    bank, owner, cases, candidate, fake_llm, django_capture_on_commit_callbacks
):
    fake_llm.responder = judge_by_version
    experiment = start(bank, owner, candidate, django_capture_on_commit_callbacks)
    Experiment.objects.filter(pk=experiment.pk).update(status=ExperimentStatus.RUNNING)  # as if redelivered
    assert experiment_run(experiment_id=experiment.pk) is True
    assert experiment_run(experiment_id=experiment.pk) is False
    assert len(fake_llm.requests) == 10


def test_transient_errors_resume_where_it_stopped(
    bank, owner, cases, candidate, fake_llm, settings, django_capture_on_commit_callbacks
):
    settings.RB_LLM_MAX_RETRIES = 3
    fake_llm.reply(verdict("success")).reply(verdict("success")).error(503, "overloaded")
    fake_llm.responder = judge_by_version
    experiment = start(bank, owner, candidate, django_capture_on_commit_callbacks)
    assert experiment.status == ExperimentStatus.DONE
    assert len(fake_llm.requests) == 11  # 10 answers and the one 503; the first case was not asked again
    assert arm_result(experiment.cases, "candidate").accuracy.n == 5


def test_a_permanent_error_fails_the_experiment_with_the_reason(
    bank, owner, cases, candidate, fake_llm, django_capture_on_commit_callbacks
):
    fake_llm.responder = lambda messages: Scripted(status=404, raw_body=b'{"error": {"message": "no such model"}}')
    experiment = start(bank, owner, candidate, django_capture_on_commit_callbacks, model="judge-xl")
    assert experiment.status == ExperimentStatus.FAILED
    assert "failed" in experiment.error and "no such model" in experiment.error
    with pytest.raises(Conflict):
        experiment_promote(experiment=experiment, author=owner)


def test_an_experiment_stops_at_the_daily_llm_budget(
    bank, owner, cases, candidate, fake_llm, django_capture_on_commit_callbacks
):
    bank_trust_policy_update(bank=bank, actor=owner, daily_llm_token_budget=100)  # less than one judge call
    fake_llm.responder = judge_by_version
    experiment = start(bank, owner, candidate, django_capture_on_commit_callbacks)
    assert experiment.status == ExperimentStatus.FAILED
    assert "daily LLM token budget is spent" in experiment.error
    assert fake_llm.requests == []  # no call was sent


def test_refusals(bank, other_bank, owner, candidate, make_trajectory, fake_llm):
    with pytest.raises(Invalid, match="No held-out trajectory"):
        experiment_start(
            bank=bank, candidate_prompt=candidate, candidate_model="", candidate_few_shot=False, author=owner
        )
    labelled(make_trajectory, "success")
    with pytest.raises(Invalid, match="is the current judge"):
        experiment_start(bank=bank, candidate_prompt=None, candidate_model="", candidate_few_shot=False, author=owner)
    theirs = prompt_version_save(bank=other_bank, name="judge", text=prompt_load("judge")[0])
    with pytest.raises(Invalid, match="not a judge prompt version of this bank"):
        experiment_start(bank=bank, candidate_prompt=theirs, candidate_model="", candidate_few_shot=False, author=owner)
    assert not Experiment.objects.exists()


def test_promote_makes_the_candidate_the_banks_judge_once(
    bank, owner, cases, candidate, fake_llm, django_capture_on_commit_callbacks
):
    fake_llm.responder = judge_by_version
    experiment = start(bank, owner, candidate, django_capture_on_commit_callbacks, model="judge-xl", few_shot=True)
    experiment_promote(experiment=experiment, author=owner)
    bank.refresh_from_db()
    assert prompt_active(bank=bank, name="judge").version == candidate.version
    assert (bank.judge_model, bank.few_shot_enabled) == ("judge-xl", True)
    assert AuditEvent.objects.filter(action="experiment.promote", bank=bank).exists()
    with pytest.raises(Conflict, match="promoted already"):
        experiment_promote(experiment=experiment, author=owner)


# --- the Judge page ---------------------------------------------------------------------------


def judge_url(bank):
    return reverse("trajectories:judge", kwargs={"bank_id": bank.public_id})


def test_admin_starts_an_experiment_from_the_page_and_sees_both_judges(
    client, bank, owner, cases, candidate, fake_llm, django_capture_on_commit_callbacks
):
    fake_llm.responder = judge_by_version
    client.force_login(owner)
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(judge_url(bank), {"candidate_prompt": candidate.public_id, "candidate_model": ""})
    assert response.status_code == 302
    page = client.get(judge_url(bank)).content.decode()
    assert "Candidate: <code>judge v1 (custom) · fake-model · no examples</code>" in page
    assert "100% [57–100%] n=5" in page and "60% [23–88%] n=5" in page
    assert "Promote the candidate" in page

    experiment = Experiment.objects.get()
    row = reverse("trajectories:experiment", kwargs={"bank_id": bank.public_id, "experiment_id": experiment.public_id})
    fragment = client.get(row, HTTP_HX_REQUEST="true").content.decode()
    assert fragment.lstrip().startswith(f'<article class="panel experiment" id="experiment-{experiment.public_id}"')
    assert "hx-trigger" not in fragment  # done: no more polling

    promote = reverse(
        "trajectories:experiment_promote", kwargs={"bank_id": bank.public_id, "experiment_id": experiment.public_id}
    )
    assert client.post(promote).status_code == 302
    assert prompt_active(bank=bank, name="judge").version == candidate.version


def test_a_running_experiment_polls_with_its_progress(client, bank, owner, candidate, cases):
    experiment = Experiment.objects.create(
        bank=bank, candidate_prompt=candidate, status=ExperimentStatus.RUNNING, total=5, done=2
    )
    client.force_login(owner)
    row = reverse("trajectories:experiment", kwargs={"bank_id": bank.public_id, "experiment_id": experiment.public_id})
    fragment = client.get(row, HTTP_HX_REQUEST="true").content.decode()
    assert 'hx-trigger="every 2s"' in fragment and "2 of 5 cases (40%)" in fragment
    assert "Promote the candidate" not in fragment


def test_form_errors_show_on_the_page(client, bank, owner, candidate, fake_llm):
    client.force_login(owner)
    response = client.post(judge_url(bank), {"candidate_prompt": candidate.public_id})
    assert response.status_code == 200
    assert "No held-out trajectory has a reviewer&#x27;s verdict yet" in response.content.decode()


@pytest.mark.parametrize("role", ["reviewer", "viewer"])
def test_below_admin_reads_but_cannot_start_or_promote(client, bank, team, role, candidate, cases):
    client.force_login(make_member(team, role))
    page = client.get(judge_url(bank))
    assert page.status_code == 200 and "Run experiment" not in page.content.decode()
    assert client.post(judge_url(bank), {"candidate_prompt": candidate.public_id}).status_code == 403
    experiment = Experiment.objects.create(bank=bank, candidate_prompt=candidate, status=ExperimentStatus.DONE)
    promote = reverse(
        "trajectories:experiment_promote", kwargs={"bank_id": bank.public_id, "experiment_id": experiment.public_id}
    )
    assert client.post(promote).status_code == 403
    assert Experiment.objects.count() == 1 and prompt_active(bank=bank, name="judge").custom is None


def test_another_teams_member_gets_404_and_anonymous_is_sent_to_login(client, bank, stranger, candidate):
    experiment = Experiment.objects.create(bank=bank, candidate_prompt=candidate)
    row = reverse("trajectories:experiment", kwargs={"bank_id": bank.public_id, "experiment_id": experiment.public_id})
    client.force_login(stranger)
    assert client.get(judge_url(bank)).status_code == 404
    assert client.get(row, HTTP_HX_REQUEST="true").status_code == 404
    client.logout()
    assert client.get(judge_url(bank)).status_code == 302


# --- the dashboard: agreement and distillation per version ----------------------------------------


def test_agreement_per_prompt_version_with_n(client, bank, owner, make_trajectory):
    for llm_label, human, version in [
        ("success", "failure", "judge/v1"),
        ("success", "success", "judge/v1"),
        ("failure", "failure", "judge@bank-1-v2"),
    ]:
        t = make_trajectory(status="done")
        record_verdict(t, llm_label, prompt_version=version)
        record_verdict(t, human, source=JudgmentSource.HUMAN)
    rows = {r.version: r for r in judge_agreement_by_version(bank=bank)}
    assert (rows["judge/v1"].accuracy.x, rows["judge/v1"].accuracy.n) == (1, 2)
    assert (rows["judge/v1"].false_success.x, rows["judge/v1"].false_success.n) == (1, 1)
    # One case is no rate: the counts, and how many more a rate needs.
    assert rows["judge@bank-1-v2"].accuracy.text == "1 of 1 (a rate needs 5 cases, 4 more)"

    client.force_login(owner)
    page = client.get(reverse("trajectories:dashboard", kwargs={"bank_id": bank.public_id})).content.decode()
    assert re.search(
        r"<code title=\"judge/v1\">judge v1 \(default\)</code>.*?1 of 2 \(a rate needs 5 cases, 3 more\)",
        page,
        re.DOTALL,
    )


def test_distillation_outcomes_per_version(bank, owner, trajectory):
    unchanged = propose_item(bank, trajectory, title="A", prompt_version="distill_success/v1")
    edited = propose_item(bank, trajectory, title="B", prompt_version="distill_success/v1")
    rejected = propose_item(bank, trajectory, title="C", prompt_version="distill_success/v1")
    propose_item(bank, trajectory, title="D", prompt_version="distill_success/v1")
    memory_item_approve(item=unchanged, author=owner)
    memory_item_edit(item=edited, author=owner, title="B2", description=edited.description, content=edited.content)
    memory_item_approve(item=edited, author=owner)
    memory_item_reject(item=rejected, author=owner)
    (row,) = distill_outcomes_by_version(bank=bank)
    assert (row.version, row.items, row.approved_unchanged, row.approved_edited, row.rejected, row.pending) == (
        "distill_success/v1",
        4,
        1,
        1,
        1,
        1,
    )
    assert row.share_rejected.text == "1 of 3 (a rate needs 5 cases, 2 more)"
