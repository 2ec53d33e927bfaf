"""Experiments: does a candidate judge (a prompt version, a model, few-shot
on or off) agree with the bank's reviewers more than the current one?

Both judges read the same cases: the bank's human-judged trajectories of the
held-out split (trajectories.judging.few_shot.in_holdout), which few-shot examples
never come from, so a candidate cannot score by having seen the answers. The
human verdict is the truth; per judge we report accuracy, the false-success
rate (judged success where the reviewer said failure — the costly error) and
the false-failure rate, each with its n and a Wilson 95% interval. Nothing
an experiment does changes a verdict: its answers live on the Experiment row.

Writes (start, run, fail, promote) are services; the Celery task
``trajectories.experiment_run`` calls ``experiment_run``."""

from __future__ import annotations

import logging
from dataclasses import dataclass

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from accounts.audit.actions import AuditAction
from accounts.audit.services import audit_record
from accounts.models import Bank
from accounts.teams.banks import bank_update_settings
from reasoningbank_site.celery import enqueue_on_commit
from reasoningbank_site.errors import Conflict, Invalid, Unavailable
from reasoningbank_site.text import prompt_version_label
from trajectories.dashboard.selectors import Rate
from trajectories.judging.few_shot import HOLDOUT_PERCENT, human_labelled, in_holdout
from trajectories.judging.models import Experiment, ExperimentStatus, PromptName, PromptVersion
from trajectories.judging.prompt_versions import (
    prompt_active,
    prompt_default_restore,
    prompt_of,
    prompt_version_activate,
)
from trajectories.models import Label, Trajectory
from trajectories.pipeline.judge import judge_prompt_build
from trajectories.pipeline.llm import chat, llm_configured
from trajectories.pipeline.llm_calls import JUDGE_REMINDER
from trajectories.pipeline.llm_errors import LLMPermanentError
from trajectories.pipeline.parsing import parse_judge_answer

log = logging.getLogger(__name__)

ARMS = ("baseline", "candidate")


# ---------------------------------------------------------------------------
# Reads
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class ArmResult:
    accuracy: Rate  # agreed with the reviewer, of the cases it gave a verdict on
    false_success: Rate  # said success, of the cases the reviewer called failure
    false_failure: Rate  # said failure, of the cases the reviewer called success
    no_verdict: int  # cases whose answer had no verdict even after a reminder


def arm_result(cases: dict, arm: str) -> ArmResult:
    """Tally one judge's answers in ``cases`` (Experiment.cases) against the humans'."""
    agree = n = fs = hf = ff = hs = none = 0
    for case in cases.values():
        if arm not in case:
            continue  # not judged yet
        said, human = case[arm], case["human"]
        if said is None:
            none += 1
            continue
        n += 1
        agree += said == human
        if human == Label.FAILURE:
            hf += 1
            fs += said == Label.SUCCESS
        else:
            hs += 1
            ff += said == Label.FAILURE
    return ArmResult(Rate(agree, n), Rate(fs, hf), Rate(ff, hs), none)


def experiment_cases(*, bank: Bank) -> list[tuple[Trajectory, str]]:
    """(trajectory, the reviewer's latest label) of the held-out split, oldest first."""
    held = [(t, human.label) for t, human, _llm in human_labelled(bank=bank) if in_holdout(t)]
    return sorted(held, key=lambda pair: pair[0].pk)


def experiments_for_bank(*, bank: Bank, limit: int = 50) -> list[Experiment]:
    """The bank's experiments, newest first (the history keeps every one)."""
    return list(
        Experiment.objects.filter(bank=bank)
        .select_related("candidate_prompt", "baseline_prompt", "created_by", "promoted_by")
        .order_by("-created_at", "-id")[:limit]
    )


def experiment_for_bank(*, bank: Bank, public_id) -> Experiment | None:
    """The bank's experiment ``public_id``, or None (another bank's too)."""
    return (
        Experiment.objects.filter(bank=bank, public_id=public_id)
        .select_related("candidate_prompt", "baseline_prompt", "created_by", "promoted_by")
        .first()
    )


def describe_judge(prompt: PromptVersion | None, model: str, few_shot: bool) -> str:
    """A judge configuration in one line, e.g. "judge v2 (custom) · gpt-4o · few-shot"."""
    version = prompt.version if prompt is not None else prompt_of(name=PromptName.JUDGE, version=None).version
    return f"{prompt_version_label(version)} · {model or settings.RB_LLM_MODEL or 'default model'} · " + (
        "few-shot" if few_shot else "no examples"
    )


# ---------------------------------------------------------------------------
# Writes
# ---------------------------------------------------------------------------


@transaction.atomic
def experiment_start(
    *, bank: Bank, candidate_prompt: PromptVersion | None, candidate_model: str, candidate_few_shot: bool, author
) -> Experiment:
    """Record an experiment of the candidate against the bank's current
    judge (its active judge prompt, judge model and few-shot setting, as they
    are now) over the held-out human-labelled trajectories, and enqueue its
    run after commit. Audited as ``experiment.start``. Raises Invalid for a
    prompt that is not this bank's judge prompt, a candidate equal to the
    current judge, or no held-out cases yet; Unavailable with no LLM endpoint."""
    if candidate_prompt is not None and (
        candidate_prompt.bank_id != bank.pk or candidate_prompt.name != PromptName.JUDGE
    ):
        raise Invalid("candidate_prompt: not a judge prompt version of this bank.")
    candidate_model = (candidate_model or "").strip()
    baseline = prompt_active(bank=bank, name=PromptName.JUDGE).custom
    same_prompt = (candidate_prompt.pk if candidate_prompt else None) == (baseline.pk if baseline else None)
    if same_prompt and candidate_model == bank.judge_model.strip() and candidate_few_shot == bank.few_shot_enabled:
        raise Invalid("The candidate is the current judge: change its prompt version, model or few-shot setting.")
    if not llm_configured():
        raise Unavailable("No LLM endpoint is configured (RB_LLM_BASE_URL): an experiment needs one.")
    cases = experiment_cases(bank=bank)
    if not cases:
        raise Invalid(
            "No held-out trajectory has a reviewer's verdict yet. Relabel or confirm more verdicts: "
            f"about {HOLDOUT_PERCENT}% of task ids are held out for experiments."
        )
    experiment = Experiment.objects.create(
        bank=bank,
        candidate_prompt=candidate_prompt,
        candidate_model=candidate_model,
        candidate_few_shot=candidate_few_shot,
        baseline_prompt=baseline,
        baseline_model=bank.judge_model.strip(),
        baseline_few_shot=bank.few_shot_enabled,
        total=len(cases),
        cases={str(t.pk): {"human": label} for t, label in cases},
        created_by=author,
    )
    audit_record(
        action=AuditAction.EXPERIMENT_START,
        bank=bank,
        user=author,
        obj=experiment,
        after={
            "candidate": describe_judge(candidate_prompt, candidate_model, candidate_few_shot),
            "baseline": describe_judge(baseline, experiment.baseline_model, experiment.baseline_few_shot),
            "cases": len(cases),
        },
    )
    enqueue_on_commit("trajectories.experiment_run", experiment.pk)
    return experiment


def _ask(model: str, prompt: str, *, bank_id: int) -> str | None:
    """The judge's label for ``prompt`` (one reminder when the answer has
    none), or None. LLM errors propagate."""
    messages = [{"role": "user", "content": prompt}]
    answer = chat(model=model, messages=messages, purpose="experiment", bank_id=bank_id)
    parsed = parse_judge_answer(answer)
    if parsed is None:
        messages += [{"role": "assistant", "content": answer or "(empty)"}, {"role": "user", "content": JUDGE_REMINDER}]
        parsed = parse_judge_answer(chat(model=model, messages=messages, purpose="experiment", bank_id=bank_id))
    return parsed.label if parsed else None


def experiment_run(*, experiment_id: int) -> bool:
    """Judge every case of the experiment not judged yet with both judges,
    saving each case's answers and the progress as it goes (so a retry or a
    redelivery resumes where it stopped); then ``done``. Returns True when
    this call finished it. A permanent LLM error ends it ``failed`` with the
    error; a transient one (LLMTransientError) propagates for the task to
    retry, progress kept."""
    claimed = Experiment.objects.filter(
        pk=experiment_id, status__in=[ExperimentStatus.QUEUED, ExperimentStatus.RUNNING]
    ).update(status=ExperimentStatus.RUNNING)
    if not claimed:
        return False
    experiment = Experiment.objects.select_related("bank", "candidate_prompt", "baseline_prompt").get(pk=experiment_id)
    judges = {
        "baseline": (experiment.baseline_prompt, experiment.baseline_model, experiment.baseline_few_shot),
        "candidate": (experiment.candidate_prompt, experiment.candidate_model, experiment.candidate_few_shot),
    }
    todo = [int(pk) for pk, case in experiment.cases.items() if not all(arm in case for arm in ARMS)]
    trajectories = Trajectory.objects.select_related("bank", "raw").in_bulk(todo)
    for pk in todo:
        case = dict(experiment.cases[str(pk)])
        t = trajectories.get(pk)
        if t is None:  # deleted since: the case is dropped, not counted
            case.update(baseline=None, candidate=None, gone=True)
        else:
            for arm, (version, model, few_shot) in judges.items():
                if arm in case:
                    continue
                prompt, _version = judge_prompt_build(
                    trajectory=t, prompt=prompt_of(name=PromptName.JUDGE, version=version), few_shot=few_shot
                )
                try:
                    case[arm] = _ask(model or settings.RB_LLM_MODEL, prompt, bank_id=experiment.bank_id)
                except LLMPermanentError as exc:
                    experiment_fail(experiment_id=experiment.pk, error=f"The {arm} judge's LLM call failed: {exc}")
                    return False
        experiment.cases[str(pk)] = case
        experiment.done = sum(1 for c in experiment.cases.values() if all(arm in c for arm in ARMS))
        experiment.save(update_fields=["cases", "done"])
    return bool(
        Experiment.objects.filter(pk=experiment.pk, status=ExperimentStatus.RUNNING).update(
            status=ExperimentStatus.DONE, finished_at=timezone.now()
        )
    )


def experiment_fail(*, experiment_id: int, error: str) -> None:
    """End a queued or running experiment as ``failed`` with ``error`` shown on its row."""
    Experiment.objects.filter(pk=experiment_id, status__in=[ExperimentStatus.QUEUED, ExperimentStatus.RUNNING]).update(
        status=ExperimentStatus.FAILED, error=error[:2000], finished_at=timezone.now()
    )


@transaction.atomic
def experiment_promote(*, experiment: Experiment, author) -> Experiment:
    """Make the experiment's candidate the bank's judge: its prompt version
    active (or the default file), its model and few-shot setting saved in the
    bank's settings (audited there). Audited as ``experiment.promote``.
    Raises Conflict unless the experiment is done and not promoted yet."""
    locked = (
        Experiment.objects.select_for_update(of=("self",))
        .select_related("bank", "candidate_prompt")
        .get(pk=experiment.pk)
    )
    if locked.status != ExperimentStatus.DONE:
        raise Conflict(
            f"Only a finished experiment can be promoted; this one is {locked.get_status_display().lower()}."
        )
    if locked.promoted_at is not None:
        raise Conflict("This experiment's candidate was promoted already.")
    bank = Bank.objects.select_for_update().get(pk=locked.bank_id)
    if locked.candidate_prompt is not None:
        prompt_version_activate(version=locked.candidate_prompt, author=author)
    elif prompt_active(bank=bank, name=PromptName.JUDGE).custom is not None:
        prompt_default_restore(bank=bank, name=PromptName.JUDGE, author=author)
    if bank.judge_model != locked.candidate_model or bank.few_shot_enabled != locked.candidate_few_shot:
        bank_update_settings(
            bank=bank, actor=author, judge_model=locked.candidate_model, few_shot_enabled=locked.candidate_few_shot
        )
    locked.promoted_at, locked.promoted_by = timezone.now(), author
    locked.save(update_fields=["promoted_at", "promoted_by"])
    audit_record(
        action=AuditAction.EXPERIMENT_PROMOTE,
        bank=bank,
        user=author,
        obj=locked,
        after={"judge": describe_judge(locked.candidate_prompt, locked.candidate_model, locked.candidate_few_shot)},
    )
    return locked
