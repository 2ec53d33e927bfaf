"""The learning pipeline: judge → distill (or MaTTS contrast / refinement
distill), relabel → re-distill, and the sweeper that picks up what a crash
left behind.

Concurrency and idempotency rest on compare-and-set status transitions
(``filter(pk=..., status=X).update(status=Y)``; zero rows means another
worker has it) and on writing a stage's results and its next status in one
transaction that first re-checks the status under a row lock. So a task
delivered twice, or redone by the sweeper while the first run still
finishes, never writes a second judgment or a second set of items.

The LLM is called outside any transaction. A transient LLM error hands the
row back to the state before the stage and re-raises for the Celery task to
retry; a permanent one (or retries run out) ends in ``needs_attention`` with
the error — never a guessed label."""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass, field
from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import Min
from django.utils import timezone

from memories.models import ItemOrigin, ItemStatus, MemoryItem
from trajectories.llm import (
    LLMPermanentError,
    LLMTransientError,
    chat,
    distill_model_for,
    judge_model_for,
    llm_configured,
)
from trajectories.models import Judgment, JudgmentSource, Label, Status, Trajectory
from trajectories.parsing import ParsedItem, parse_judge_answer, parse_memory_items
from trajectories.prompts import prompt_render

log = logging.getLogger(__name__)

MAX_ITEMS = 3
MAX_ITEMS_PARALLEL = 5
EXCERPT_CHARS = 500
NO_LLM_DETAIL = "No LLM endpoint is configured (RB_LLM_BASE_URL); it resumes when one is set. Humans can judge it and write items meanwhile."

# ---------------------------------------------------------------------------
# Rendering untrusted trajectory text into a prompt
# ---------------------------------------------------------------------------

_OUR_TAGS = re.compile(r"<(\s*/?\s*)(trajectory|task|steps|final_answer|rollouts|rollout)\b", re.IGNORECASE)


def neutralize(text: str) -> str:
    """Make ``text`` unable to open or close one of our delimiting tags (it is
    data: a trajectory must not end its own block and talk to the model)."""
    return _OUR_TAGS.sub(lambda m: "&lt;" + m.group(1) + m.group(2), text or "")


def _cut_middle(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    keep = max(limit - 60, 20)
    head, tail = text[: keep * 2 // 3], text[-(keep // 3) :]
    return f"{head}\n[… {len(text) - len(head) - len(tail)} characters cut …]\n{tail}"


def _render_step(step: dict, per_step: int) -> str:
    kind = str(step.get("kind", "step"))
    label = kind + (f" {step['name']}" if step.get("name") else "") + (" [ERROR]" if step.get("is_error") else "")
    content = str(step.get("content") or "")
    if step.get("arguments"):
        content = f"{content}\narguments: {step['arguments']}".strip()
    return f"[step {step.get('index', '?')}] {label}:\n{neutralize(_cut_middle(content, per_step))}"


def render_steps(steps: list[dict], budget: int) -> str:
    """The steps as text within ``budget`` characters. When they do not fit,
    the start, the end, the error steps and the refinement notes are kept first
    and every gap is marked, so the reader knows something was cut."""
    per_step = max(400, budget // 6)
    lines = [_render_step(s, per_step) for s in steps]
    if sum(len(line) + 1 for line in lines) <= budget:
        return "\n".join(lines)
    n = len(lines)
    order = [0, 1, n - 1, n - 2, n - 3]
    order += [i for i, s in enumerate(steps) if s.get("is_error")]
    order += [i for i, s in enumerate(steps) if s.get("kind") == "refinement"]
    head, tail = 2, n - 4
    while head <= tail:  # then alternate from both ends towards the middle
        order += [head, tail]
        head, tail = head + 1, tail - 1
    kept: set[int] = set()
    used = 0
    for i in order:
        if 0 <= i < n and i not in kept and used + len(lines[i]) + 1 <= budget:
            kept.add(i)
            used += len(lines[i]) + 1
    out, gap = [], 0
    for i in range(n):
        if i in kept:
            if gap:
                out.append(f"[… {gap} step(s) omitted to fit the prompt budget …]")
                gap = 0
            out.append(lines[i])
        else:
            gap += 1
    if gap:
        out.append(f"[… {gap} step(s) omitted to fit the prompt budget …]")
    return "\n".join(out)


def render_trajectory(
    trajectory: Trajectory, *, budget: int | None = None, tag: str = "trajectory", attrs: str = ""
) -> str:
    """``<trajectory>`` block of the task, steps and final answer, neutralized
    and cut to ``budget`` characters (settings.RB_PROMPT_CHAR_BUDGET)."""
    budget = budget or settings.RB_PROMPT_CHAR_BUDGET
    task = neutralize(_cut_middle(trajectory.task, max(500, budget // 6)))
    final = neutralize(_cut_middle(trajectory.final_answer or "(none given)", max(500, budget // 6)))
    steps_budget = max(1000, budget - len(task) - len(final) - 200)
    steps = render_steps(list(trajectory.steps or []), steps_budget) or "(no steps recorded)"
    return (
        f"<{tag}{attrs}>\n<task>\n{task}\n</task>\n<steps>\n{steps}\n</steps>\n"
        f"<final_answer>\n{final}\n</final_answer>\n</{tag}>"
    )


def _excerpt(text: str) -> str:
    text = (text or "").strip()
    return text if len(text) <= EXCERPT_CHARS else text[:EXCERPT_CHARS] + " …"


# ---------------------------------------------------------------------------
# Status transitions
# ---------------------------------------------------------------------------


def _move(pk: int, from_statuses, to: str, detail: str = "") -> bool:
    """Compare-and-set: True when this caller moved the row."""
    if isinstance(from_statuses, str):
        from_statuses = [from_statuses]
    moved = Trajectory.objects.filter(pk=pk, status__in=list(from_statuses)).update(
        status=to, status_detail=detail, updated_at=timezone.now()
    )
    return moved == 1


def trajectory_mark_needs_attention(*, trajectory_id: int, detail: str) -> None:
    """Put a trajectory (and, if it waits in a MaTTS group, the group's
    waiting members) in ``needs_attention`` with ``detail``. A finished
    trajectory is left alone."""
    t = Trajectory.objects.filter(pk=trajectory_id).first()
    if t is None or t.status == Status.DONE:
        return
    now = timezone.now()
    if t.group_id and t.status == Status.WAITING_GROUP:
        Trajectory.objects.filter(bank_id=t.bank_id, group_id=t.group_id, status=Status.WAITING_GROUP).update(
            status=Status.NEEDS_ATTENTION, status_detail=detail, updated_at=now
        )
    Trajectory.objects.filter(pk=t.pk).exclude(status=Status.DONE).update(
        status=Status.NEEDS_ATTENTION, status_detail=detail, updated_at=now
    )


def _enqueue_process(pk: int) -> None:
    from trajectories.tasks import trajectory_process

    transaction.on_commit(lambda: trajectory_process.delay(pk))


def _enqueue_group(bank_id: int, group_id: str, force: bool) -> None:
    from trajectories.tasks import trajectory_group_distill

    transaction.on_commit(lambda: trajectory_group_distill.delay(bank_id, group_id, force))


# ---------------------------------------------------------------------------
# The driver
# ---------------------------------------------------------------------------


def trajectory_advance(*, trajectory_id: int) -> None:
    """Run every stage the trajectory is ready for, from its current status:
    received → judged (judge, or skipped when a verdict exists) → distilling
    → done, or → waiting_group for MaTTS members. Stops quietly when another
    worker owns the row or nothing is left to do. Raises LLMTransientError
    (after handing the row back) for the caller to retry later."""
    for _ in range(4):  # each pass moves the status forward; the bound guards against a loop
        t = Trajectory.objects.filter(pk=trajectory_id).first()
        if t is None:
            return
        if t.status in (Status.RECEIVED, Status.AWAITING_LLM):
            if t.verdict:  # trusted agent signal or a human verdict: no judge needed
                _move(
                    t.pk,
                    [Status.RECEIVED, Status.AWAITING_LLM],
                    Status.JUDGED,
                    f"Verdict {t.verdict} given; judge skipped.",
                )
                continue
            if not llm_configured():
                _move(t.pk, Status.RECEIVED, Status.AWAITING_LLM, NO_LLM_DETAIL)
                return
            if not trajectory_judge(trajectory_id=t.pk):
                return
        elif t.status == Status.JUDGED:
            if t.group_id:
                if _move(t.pk, Status.JUDGED, Status.WAITING_GROUP, "Waiting for the rest of its MaTTS group."):
                    trajectory_group_distill(bank_id=t.bank_id, group_id=t.group_id)
                return
            if not llm_configured():
                _move(t.pk, Status.JUDGED, Status.AWAITING_LLM, NO_LLM_DETAIL)
                return
            trajectory_distill(trajectory_id=t.pk)
            return
        elif t.status == Status.WAITING_GROUP:
            trajectory_group_distill(bank_id=t.bank_id, group_id=t.group_id)
            return
        else:  # judging/distilling (someone has it), done, needs_attention
            return


# ---------------------------------------------------------------------------
# Judge
# ---------------------------------------------------------------------------

JUDGE_REMINDER = (
    "I could not find an explicit verdict in your answer. Reply with only this JSON object and nothing else: "
    '{"verdict": "success" or "failure", "rationale": "..."}'
)


def trajectory_judge(*, trajectory_id: int) -> bool:
    """Ask the LLM judge for a verdict and record it as Judgment(source=llm)
    keyed by the prompt version; the trajectory becomes ``judged``. An answer
    with no explicit verdict is asked again once, then the trajectory is
    ``needs_attention`` with the answer's start. Returns True when the
    trajectory is now judged by this call. Raises LLMTransientError after
    handing the trajectory back to ``received``."""
    from trajectories.services import judgment_record

    if not _move(trajectory_id, [Status.RECEIVED, Status.AWAITING_LLM], Status.JUDGING, "The LLM judge is reading it."):
        return False
    t = Trajectory.objects.select_related("bank").get(pk=trajectory_id)
    prompt, version = prompt_render("judge", trajectory=render_trajectory(t))
    if Judgment.objects.filter(trajectory=t, source=JudgmentSource.LLM, prompt_version=version).exists():
        return _move(t.pk, Status.JUDGING, Status.JUDGED, "Already judged with this prompt version.")
    model = judge_model_for(t.bank)
    messages = [{"role": "user", "content": prompt}]
    try:
        answer = chat(model=model, messages=messages)
        parsed = parse_judge_answer(answer)
        if parsed is None:
            log.info("judge answer for trajectory %s had no verdict; asking once more", t.pk)
            messages += [
                {"role": "assistant", "content": answer or "(empty)"},
                {"role": "user", "content": JUDGE_REMINDER},
            ]
            answer = chat(model=model, messages=messages)
            parsed = parse_judge_answer(answer)
    except LLMTransientError as exc:
        _move(t.pk, Status.JUDGING, Status.RECEIVED, f"LLM judge failed transiently, will retry: {exc}")
        raise
    except LLMPermanentError as exc:
        _move(t.pk, Status.JUDGING, Status.NEEDS_ATTENTION, f"LLM judge error: {exc}")
        return False
    if parsed is None:
        _move(
            t.pk,
            Status.JUDGING,
            Status.NEEDS_ATTENTION,
            f"The judge ({model}, {version}) gave no parseable verdict after a retry. Its answer began: {_excerpt(answer)}",
        )
        return False
    with transaction.atomic():
        locked = Trajectory.objects.select_for_update().get(pk=t.pk)
        if locked.status != Status.JUDGING:
            return False  # relabelled or swept meanwhile: this result is stale
        judgment_record(
            trajectory=locked,
            source=JudgmentSource.LLM,
            label=parsed.label,
            rationale=parsed.rationale,
            model=model,
            prompt_version=version,
        )
        Trajectory.objects.filter(pk=t.pk).update(
            status=Status.JUDGED, status_detail=f"Judged {parsed.label} by {model}.", updated_at=timezone.now()
        )
    return True


# ---------------------------------------------------------------------------
# Distill
# ---------------------------------------------------------------------------

DISTILL_REMINDER = (
    "I could not find complete memory items in your answer. Write them now, each with a Title, a Description "
    "and a Content section, in the '# Memory Item N' format asked for."
)


def _ask_for_items(*, model: str, prompt: str, max_items: int) -> tuple[list[ParsedItem], str]:
    messages = [{"role": "user", "content": prompt}]
    answer = chat(model=model, messages=messages)
    items = parse_memory_items(answer, max_items=max_items)
    if not items:
        messages += [
            {"role": "assistant", "content": answer or "(empty)"},
            {"role": "user", "content": DISTILL_REMINDER},
        ]
        answer = chat(model=model, messages=messages)
        items = parse_memory_items(answer, max_items=max_items)
    return items, answer


def _has_refinements(t: Trajectory) -> bool:
    return any(isinstance(s, dict) and s.get("kind") == "refinement" for s in (t.steps or []))


def _step_indexes(t: Trajectory) -> set[int]:
    return {s.get("index") for s in (t.steps or []) if isinstance(s, dict) and isinstance(s.get("index"), int)}


def _ensure_experience(t: Trajectory):
    from memories.services import experience_create

    if t.experience_id:
        return t.experience
    experience = experience_create(bank=t.bank, task=t.task, task_id=t.task_id)
    t.experience = experience
    Trajectory.objects.filter(pk=t.pk).update(experience=experience)
    return experience


def trajectory_distill(*, trajectory_id: int) -> bool:
    """Distill up to 3 memory items from one judged trajectory with the prompt
    its verdict calls for (success, failure, or MaTTS-sequential when it has
    refinement steps), proposing them through ``memory_item_propose`` under an
    Experience linked to the trajectory; the trajectory becomes ``done``.
    Returns True when this call proposed the items. Raises
    LLMTransientError after handing the trajectory back to ``judged``."""
    from memories.services import memory_item_propose

    if not _move(trajectory_id, Status.JUDGED, Status.DISTILLING, "Distilling memory items."):
        return False
    t = Trajectory.objects.select_related("bank").get(pk=trajectory_id)
    if t.verdict not in Label.values:
        _move(t.pk, Status.DISTILLING, Status.NEEDS_ATTENTION, "No verdict to distill under; judge it first.")
        return False
    if _has_refinements(t):
        name, origin = "matts_sequential", ItemOrigin.MATTS_SEQUENTIAL
    elif t.verdict == Label.SUCCESS:
        name, origin = "distill_success", ItemOrigin.SUCCESS
    else:
        name, origin = "distill_failure", ItemOrigin.FAILURE
    block = f"Verdict given to this run by the reviewers (not part of the record): {t.verdict.upper()}\n\n{render_trajectory(t)}"
    prompt, version = prompt_render(name, trajectory=block, max_items=str(MAX_ITEMS))
    model = distill_model_for(t.bank)
    try:
        items, answer = _ask_for_items(model=model, prompt=prompt, max_items=MAX_ITEMS)
    except LLMTransientError as exc:
        _move(t.pk, Status.DISTILLING, Status.JUDGED, f"Distillation failed transiently, will retry: {exc}")
        raise
    except LLMPermanentError as exc:
        _move(t.pk, Status.DISTILLING, Status.NEEDS_ATTENTION, f"Distillation error: {exc}")
        return False
    if not items:
        _move(
            t.pk,
            Status.DISTILLING,
            Status.NEEDS_ATTENTION,
            f"The distiller ({model}, {version}) gave no complete memory item after a retry. Its answer began: {_excerpt(answer)}",
        )
        return False
    valid_steps = _step_indexes(t)
    with transaction.atomic():
        locked = Trajectory.objects.select_for_update(of=("self",)).select_related("bank", "experience").get(pk=t.pk)
        if locked.status != Status.DISTILLING or locked.verdict != t.verdict:
            return False  # relabelled or swept meanwhile: this result is stale
        experience = _ensure_experience(locked)
        for item in items:
            memory_item_propose(
                bank=locked.bank,
                title=item.title,
                description=item.description,
                content=item.content,
                origin=origin,
                experience=experience,
                source_task_id=locked.task_id,
                cited_steps=[
                    {"trajectory": str(locked.public_id), "step": step}
                    for _rollout, step in item.citations
                    if step in valid_steps
                ],
                model=model,
                prompt_version=version,
                verdict_label=locked.verdict,
            )
        Trajectory.objects.filter(pk=t.pk).update(
            status=Status.DONE,
            status_detail=f"{len(items)} memory item(s) proposed for review.",
            updated_at=timezone.now(),
        )
    return True


# ---------------------------------------------------------------------------
# MaTTS parallel: contrast a group of rollouts of one task
# ---------------------------------------------------------------------------


def _render_group(members: list[Trajectory]) -> str:
    budget = settings.RB_PROMPT_CHAR_BUDGET
    per = max(2000, budget // max(1, len(members)))
    blocks = [
        render_trajectory(m, budget=per, tag="rollout", attrs=f' n="{n}" verdict="{m.verdict}"')
        for n, m in enumerate(members, start=1)
    ]
    return "<rollouts>\n" + "\n".join(blocks) + "\n</rollouts>"


def trajectory_group_distill(*, bank_id: int, group_id: str, force: bool = False) -> bool:
    """Contrast-distill a MaTTS parallel group once: when as many members are
    judged (``waiting_group``) as the first member declared in
    ``group_size``, or — with ``force``, after the wait ran out — with
    whatever arrived (≥2; a lone member is distilled on its own). Up to 5
    items, origin matts-parallel, one Experience shared by the members.
    Returns True when this call proposed the items. Raises
    LLMTransientError after handing the members back to ``waiting_group``."""
    from memories.services import memory_item_propose

    with transaction.atomic():
        members = list(
            Trajectory.objects.select_for_update()
            .filter(bank_id=bank_id, group_id=group_id)
            .order_by("created_at", "pk")
        )
        if not group_id or not members or any(m.status == Status.DISTILLING for m in members):
            return False
        declared = next((m.group_size for m in members if m.group_size), None)
        ready = [m for m in members if m.status == Status.WAITING_GROUP]
        if not ready or not (force or (declared and len(ready) >= declared)):
            return False
        if not llm_configured():
            Trajectory.objects.filter(pk__in=[m.pk for m in ready]).update(status_detail=NO_LLM_DETAIL)
            return False
        if len(ready) == 1:
            lone = ready[0]
            lone.status, lone.status_detail = (
                Status.JUDGED,
                "Its MaTTS group closed with no other member; distilled on its own.",
            )
            lone.updated_at = timezone.now()
            Trajectory.objects.filter(pk=lone.pk).update(
                status=lone.status, status_detail=lone.status_detail, updated_at=lone.updated_at
            )
            transaction.on_commit(lambda: _redistill_alone(lone.pk))
            return False
        ids = [m.pk for m in ready]
        Trajectory.objects.filter(pk__in=ids).update(
            status=Status.DISTILLING,
            status_detail=f"Contrasting {len(ids)} rollouts (MaTTS parallel).",
            updated_at=timezone.now(),
        )
    members = list(Trajectory.objects.select_related("bank").filter(pk__in=ids).order_by("created_at", "pk"))
    bank = members[0].bank
    prompt, version = prompt_render(
        "matts_parallel", rollouts=_render_group(members), max_items=str(MAX_ITEMS_PARALLEL)
    )
    model = distill_model_for(bank)
    try:
        items, answer = _ask_for_items(model=model, prompt=prompt, max_items=MAX_ITEMS_PARALLEL)
    except LLMTransientError as exc:
        Trajectory.objects.filter(pk__in=ids, status=Status.DISTILLING).update(
            status=Status.WAITING_GROUP,
            status_detail=f"Contrast distillation failed transiently, will retry: {exc}",
            updated_at=timezone.now(),
        )
        raise
    except LLMPermanentError as exc:
        Trajectory.objects.filter(pk__in=ids, status=Status.DISTILLING).update(
            status=Status.NEEDS_ATTENTION,
            status_detail=f"Contrast distillation error: {exc}",
            updated_at=timezone.now(),
        )
        return False
    if not items:
        Trajectory.objects.filter(pk__in=ids, status=Status.DISTILLING).update(
            status=Status.NEEDS_ATTENTION,
            status_detail=f"The distiller ({model}, {version}) gave no complete memory item after a retry. Its answer began: {_excerpt(answer)}",
            updated_at=timezone.now(),
        )
        return False
    with transaction.atomic():
        locked = list(
            Trajectory.objects.select_for_update(of=("self",))
            .select_related("bank", "experience")
            .filter(pk__in=ids)
            .order_by("created_at", "pk")
        )
        if any(m.status != Status.DISTILLING for m in locked):
            return False  # relabelled or swept meanwhile
        experience = next((m.experience for m in locked if m.experience_id), None) or _ensure_experience(locked[0])
        Trajectory.objects.filter(pk__in=ids).update(experience=experience)
        steps_by_rollout = {n: _step_indexes(m) for n, m in enumerate(locked, start=1)}
        for item in items:
            cited = [
                {"trajectory": str(locked[r - 1].public_id), "step": s}
                for r, s in item.citations
                if r is not None and r in steps_by_rollout and s in steps_by_rollout[r]
            ]
            memory_item_propose(
                bank=bank,
                title=item.title,
                description=item.description,
                content=item.content,
                origin=ItemOrigin.MATTS_PARALLEL,
                experience=experience,
                source_task_id=locked[0].task_id,
                cited_steps=cited,
                model=model,
                prompt_version=version,
                verdict_label="",
            )
        Trajectory.objects.filter(pk__in=ids).update(
            status=Status.DONE,
            status_detail=f"Contrasted with {len(ids) - 1} other rollout(s): {len(items)} item(s) proposed.",
            updated_at=timezone.now(),
        )
    return True


def _redistill_alone(pk: int) -> None:
    # Straight to distillation: the driver would put a group member back to waiting.
    from trajectories.tasks import trajectory_distill_alone

    trajectory_distill_alone.delay(pk)


# ---------------------------------------------------------------------------
# Relabel
# ---------------------------------------------------------------------------


@transaction.atomic
def trajectory_relabel(*, trajectory: Trajectory, label: str, reason: str, author) -> Judgment:
    """Record a human verdict (a new Judgment, source=human). When it changes
    the effective verdict: proposed items distilled under the old verdict
    become superseded, approved ones are flagged for review (never deleted),
    and distillation reruns with the right prompt (enqueued after commit; for
    a MaTTS group member the group's contrast reruns). Raises ValueError for
    a label other than success/failure."""
    from accounts.services import audit_record
    from memories.services import memory_item_flag, memory_item_supersede
    from trajectories.services import judgment_record

    if label not in Label.values:
        raise ValueError(f"label must be one of {Label.values}, got {label!r}")
    t = Trajectory.objects.select_for_update().get(pk=trajectory.pk)
    old = t.verdict
    judgment = judgment_record(trajectory=t, source=JudgmentSource.HUMAN, label=label, rationale=reason, author=author)
    t.refresh_from_db()
    audit_record(
        action="trajectory.relabel",
        bank=t.bank,
        user=author,
        obj=t,
        before={"verdict": old or None},
        after={"verdict": t.verdict, "label": label, "reason": reason},
    )
    if t.verdict == old:
        return judgment
    who = getattr(author, "username", None) or "a reviewer"
    note = f"Verdict changed from {old or 'none'} to {t.verdict} by {who}" + (f": {reason}" if reason else ".")
    if t.experience_id:
        items = MemoryItem.objects.filter(experience_id=t.experience_id)
        if t.group_id:
            affected = items.filter(origin=ItemOrigin.MATTS_PARALLEL)
        else:
            affected = items.filter(verdict_label=old).exclude(origin=ItemOrigin.MATTS_PARALLEL)
        for item in affected.filter(status=ItemStatus.PROPOSED):
            memory_item_supersede(item=item, reason=note[:200])
        for item in affected.filter(status=ItemStatus.APPROVED):
            memory_item_flag(item=item, reason=note[:200])
    now = timezone.now()
    if t.group_id:
        distilled = Trajectory.objects.filter(bank_id=t.bank_id, group_id=t.group_id, status=Status.DONE)
        if distilled.exists():
            distilled.update(status=Status.WAITING_GROUP, status_detail=f"Re-contrasting: {note}", updated_at=now)
            _enqueue_group(t.bank_id, t.group_id, True)
            return judgment
    if t.status != Status.WAITING_GROUP:
        Trajectory.objects.filter(pk=t.pk).update(
            status=Status.JUDGED, status_detail=f"Re-distilling: {note}", updated_at=now
        )
        _enqueue_process(t.pk)
    return judgment


# ---------------------------------------------------------------------------
# Sweeper
# ---------------------------------------------------------------------------


@dataclass
class SweepReport:
    stale_judging: list[int] = field(default_factory=list)
    stale_distilling: list[int] = field(default_factory=list)
    never_picked_up: list[int] = field(default_factory=list)
    resumed_awaiting_llm: list[int] = field(default_factory=list)
    groups_closed: list[tuple[int, str]] = field(default_factory=list)

    @property
    def total(self) -> int:
        return sum(
            len(v)
            for v in (
                self.stale_judging,
                self.stale_distilling,
                self.never_picked_up,
                self.resumed_awaiting_llm,
                self.groups_closed,
            )
        )

    def lines(self) -> list[str]:
        return [
            f"re-enqueued {len(self.stale_judging)} trajectory(ies) stuck in judging: {self.stale_judging}",
            f"re-enqueued {len(self.stale_distilling)} trajectory(ies) stuck in distilling: {self.stale_distilling}",
            f"re-enqueued {len(self.never_picked_up)} received trajectory(ies) never picked up: {self.never_picked_up}",
            f"resumed {len(self.resumed_awaiting_llm)} trajectory(ies) awaiting an LLM: {self.resumed_awaiting_llm}"
            + ("" if llm_configured() else " (no LLM endpoint configured)"),
            f"closed {len(self.groups_closed)} expired MaTTS group(s): {[g for _b, g in self.groups_closed]}",
        ]


def pipeline_sweep(*, stale_seconds: int | None = None, group_wait_seconds: int | None = None) -> SweepReport:
    """Pick up what was left behind, and enqueue it: rows left judging or
    distilling longer than ``stale_seconds`` (a worker died) are moved back a
    stage; received rows never picked up are re-sent; awaiting_llm rows resume
    when an LLM is configured; MaTTS groups waiting longer than
    ``group_wait_seconds`` are closed with what arrived. Safe to run
    concurrently with workers: every move is compare-and-set."""
    stale = timedelta(seconds=settings.RB_PIPELINE_STALE_SECONDS if stale_seconds is None else stale_seconds)
    wait = timedelta(seconds=settings.RB_MATTS_GROUP_WAIT_SECONDS if group_wait_seconds is None else group_wait_seconds)
    now = timezone.now()
    report = SweepReport()
    old = Trajectory.objects.filter(updated_at__lte=now - stale)

    for pk in old.filter(status=Status.JUDGING).values_list("pk", flat=True):
        if Trajectory.objects.filter(pk=pk, status=Status.JUDGING, updated_at__lte=now - stale).update(
            status=Status.RECEIVED,
            status_detail="Re-queued by the sweeper: judging stalled (worker lost?).",
            updated_at=now,
        ):
            report.stale_judging.append(pk)
            _enqueue_process(pk)
    for pk, group_id, bank_id in old.filter(status=Status.DISTILLING).values_list("pk", "group_id", "bank_id"):
        back = Status.WAITING_GROUP if group_id else Status.JUDGED
        if Trajectory.objects.filter(pk=pk, status=Status.DISTILLING, updated_at__lte=now - stale).update(
            status=back, status_detail="Re-queued by the sweeper: distillation stalled (worker lost?).", updated_at=now
        ):
            report.stale_distilling.append(pk)
            if group_id:
                if (bank_id, group_id) not in report.groups_closed:
                    report.groups_closed.append((bank_id, group_id))
                    _enqueue_group(bank_id, group_id, True)
            else:
                _enqueue_process(pk)
    for pk in (
        old.filter(status__in=[Status.RECEIVED, Status.JUDGED])
        .exclude(pk__in=report.stale_judging + report.stale_distilling)
        .values_list("pk", flat=True)
    ):
        report.never_picked_up.append(pk)
        _enqueue_process(pk)
    if llm_configured():
        for pk in Trajectory.objects.filter(status=Status.AWAITING_LLM).values_list("pk", flat=True):
            report.resumed_awaiting_llm.append(pk)
            _enqueue_process(pk)
        # Complete MaTTS groups that found no LLM when their last member was judged.
        stalled_groups = (
            Trajectory.objects.filter(status=Status.WAITING_GROUP, status_detail=NO_LLM_DETAIL)
            .values_list("bank_id", "group_id")
            .distinct()
        )
        for bank_id, group_id in stalled_groups:
            _enqueue_group(bank_id, group_id, False)
    expired = (
        Trajectory.objects.filter(status=Status.WAITING_GROUP)
        .values("bank_id", "group_id")
        .annotate(first=Min("created_at"))
        .filter(first__lte=now - wait)
    )
    for row in expired:
        key = (row["bank_id"], row["group_id"])
        if key not in report.groups_closed:
            report.groups_closed.append(key)
            _enqueue_group(key[0], key[1], True)
    return report
