"""Verdicts: a judgment recorded (agent, LLM or human), the effective verdict
it sets and what that changes in the Impact report, and a human relabel that
sends the trajectory through distillation again."""

from __future__ import annotations

from django.db import connection, transaction

from accounts.audit.actions import AuditAction
from accounts.audit.services import audit_record
from accounts.models import Bank
from memories.items.models import ItemOrigin, ItemStatus, MemoryItem
from memories.review.decisions import memory_item_flag, memory_item_supersede
from memories.serving.models import RetrievalEvent
from memories.serving.tallies import (
    counters_difference,
    retrieval_outcome_change,
    retrieval_tallies_rebuild,
    trajectory_counters,
)
from memories.trust.models import VerdictTier
from reasoningbank_site.celery import enqueue_on_commit
from reasoningbank_site.errors import Invalid
from trajectories.evaluation.refresh import evaluation_verdict_changed
from trajectories.models import Judgment, JudgmentSource, Label, Status, Trajectory
from trajectories.pipeline.dispatch import trajectory_enqueue
from trajectories.pipeline.transitions import trajectory_move, trajectory_move_many

# What judgment_record reads of the trajectory it locks (its verdict and what the verdict moves in the report).
VERDICT_FIELDS = (
    "pk", "verdict", "verdict_tier", "retrieval_id", "bank_id", "step_count", "prompt_tokens", "completion_tokens",
    "learn",
)  # fmt: skip

# The tier of a verdict by the source of the judgment that sets it: the agent's own report ranks lowest.
SOURCE_TIER = {
    JudgmentSource.HUMAN: VerdictTier.HUMAN,
    JudgmentSource.LLM: VerdictTier.JUDGE,
    JudgmentSource.AGENT: VerdictTier.AGENT,
}


def _effective_verdict(judgments: list[Judgment]) -> tuple[str, int]:
    """Latest human, else latest agent (agent judgments are only recorded when
    trusted), else latest LLM, with its tier; ('', NONE) when there is none.
    A bank that trusts its agents takes their label, but at the lowest tier."""
    for source in (JudgmentSource.HUMAN, JudgmentSource.AGENT, JudgmentSource.LLM):
        of_source = [j for j in judgments if j.source == source]
        if of_source:
            return of_source[-1].label, SOURCE_TIER[source]
    return "", VerdictTier.NONE


def judgment_record(
    *,
    trajectory: Trajectory,
    source: str,
    label: str,
    rationale: str = "",
    model: str = "",
    prompt_version: str = "",
    author=None,
    locked: bool = False,
    save_verdict: bool = True,
) -> Judgment:
    """Append a Judgment (never overwrites one) and set ``trajectory.verdict``
    to the effective verdict: the latest human judgment, else the trusted
    agent signal, else the latest LLM judgment (and ``verdict_tier`` to its
    tier: human, agent — the lowest —, judge). The trajectory row is locked
    so concurrent judgments agree on the verdict; ``trajectory`` is updated in
    place. ``locked``: the caller read ``trajectory`` in this transaction
    with ``select_for_update`` (at least its pk, verdict, verdict_tier,
    retrieval_id, bank_id, step_count, prompt_tokens, completion_tokens and learn): it
    is used as is, not locked and read again.
    ``save_verdict=False``: the new verdict is set on ``trajectory`` but not
    written; the caller writes it with its own update of the row (a status
    move: one UPDATE instead of two).

    When the verdict of an evaluation try (``learn=False``) changes, its run's
    results are computed again once this commits.

    An LLM judgment is keyed by (trajectory, prompt_version): recording it
    again returns the existing one unchanged (a redelivered task judges once).

    Raises ValueError for an unknown source or label (callers validate what
    users send: see trajectory_relabel)."""
    if source not in JudgmentSource.values:
        raise ValueError(f"source must be one of {JudgmentSource.values}, got {source!r}")
    if label not in Label.values:
        raise ValueError(f"label must be one of {Label.values}, got {label!r}")
    # Checked above, so nothing inside raises a refusal: inside the caller's transaction no savepoint is needed.
    with transaction.atomic(savepoint=False):
        row = (
            trajectory if locked else Trajectory.objects.select_for_update().only(*VERDICT_FIELDS).get(pk=trajectory.pk)
        )
        # Its judgments so far, read once: for the LLM's key and for the effective verdict with the new one last.
        judgments = list(Judgment.objects.filter(trajectory_id=row.pk).order_by("created_at", "id"))
        if source == JudgmentSource.LLM:
            existing = [j for j in judgments if j.source == source and j.prompt_version == prompt_version]
            if existing:
                trajectory.verdict, trajectory.verdict_tier = row.verdict, row.verdict_tier
                return min(existing, key=lambda j: j.pk)
        judgment = Judgment(
            trajectory=row,
            source=source,
            label=label,
            rationale=rationale,
            model=model,
            prompt_version=prompt_version,
            author=author,
        )
        judgment.save(force_insert=True)
        verdict, tier = _effective_verdict([*judgments, judgment])
        if verdict != row.verdict and row.retrieval_id is not None:
            _retrieval_outcome_move(trajectory=row, old=row.verdict, new=verdict)
        if verdict != row.verdict and not row.learn:  # an evaluation try: its run's results change
            evaluation_verdict_changed(trajectory_id=row.pk)
        if (verdict, tier) != (row.verdict, row.verdict_tier):
            row.verdict, row.verdict_tier = verdict, tier
            if save_verdict:
                row.save(update_fields=["verdict", "verdict_tier", "updated_at"])
        trajectory.verdict, trajectory.verdict_tier = verdict, tier
        return judgment


def _retrieval_outcome_move(*, trajectory: Trajectory, old: str, new: str) -> None:
    """The one place a verdict reaches the Impact report: the trajectory's
    retrieval counts it as judged (and a success, and its tokens when it
    reported usage) or no longer does."""
    retrieval_outcome_change(
        retrieval_id=trajectory.retrieval_id,
        **counters_difference(outcome_counters(trajectory, new), outcome_counters(trajectory, old)),
    )


def outcome_counters(trajectory: Trajectory, verdict: str) -> dict[str, int]:
    """What ``trajectory`` adds to its retrieval's outcome counters with ``verdict`` (linked aside)."""
    return trajectory_counters(
        judged=verdict in Label.values,
        success=verdict == Label.SUCCESS,
        steps=trajectory.step_count,
        prompt_tokens=trajectory.prompt_tokens,
        completion_tokens=trajectory.completion_tokens,
    )


# Each retrieval's outcome counters from its trajectories (of the same bank), for a rebuild.
_OUTCOMES_SQL = """
UPDATE {retrieval} r
SET linked = s.linked, judged = s.judged, successes = s.successes, steps = s.steps, usage_runs = s.usage_runs,
    usage_successes = s.usage_successes, prompt_tokens = s.prompt_tokens, completion_tokens = s.completion_tokens
FROM (
    SELECT r2.id,
           COUNT(t.id) AS linked,
           COUNT(t.id) FILTER (WHERE t.verdict IN (%(success)s, %(failure)s)) AS judged,
           COUNT(t.id) FILTER (WHERE t.verdict = %(success)s) AS successes,
           COALESCE(SUM(t.step_count) FILTER (WHERE t.verdict IN (%(success)s, %(failure)s)), 0) AS steps,
           COUNT(t.id) FILTER (WHERE t.verdict IN (%(success)s, %(failure)s) AND {usage}) AS usage_runs,
           COUNT(t.id) FILTER (WHERE t.verdict = %(success)s AND {usage}) AS usage_successes,
           COALESCE(SUM(COALESCE(t.prompt_tokens, 0))
                    FILTER (WHERE t.verdict IN (%(success)s, %(failure)s) AND {usage}), 0) AS prompt_tokens,
           COALESCE(SUM(COALESCE(t.completion_tokens, 0))
                    FILTER (WHERE t.verdict IN (%(success)s, %(failure)s) AND {usage}), 0) AS completion_tokens
    FROM {retrieval} r2
    LEFT JOIN {trajectory} t ON t.retrieval_id = r2.id AND t.bank_id = r2.bank_id
    WHERE r2.bank_id = %(bank)s
    GROUP BY r2.id
) s
WHERE r.id = s.id
"""


@transaction.atomic
def retrieval_outcomes_rebuild(*, bank: Bank) -> None:
    """Recompute every retrieval's outcome counters of ``bank`` from its
    trajectories' effective verdicts, then the Impact report's sums from them
    (memories.serving.tallies.retrieval_tallies_rebuild): for data loaded in bulk,
    the migration that introduced them, or a repair."""
    sql = _OUTCOMES_SQL.format(
        retrieval=RetrievalEvent._meta.db_table,
        trajectory=Trajectory._meta.db_table,
        usage="(t.prompt_tokens IS NOT NULL OR t.completion_tokens IS NOT NULL)",
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, {"bank": bank.pk, "success": Label.SUCCESS.value, "failure": Label.FAILURE.value})
    retrieval_tallies_rebuild(bank_id=bank.pk)


@transaction.atomic
def trajectory_relabel(*, trajectory: Trajectory, label: str, reason: str, author) -> Judgment:
    """Record a human verdict (a new Judgment, source=human), audited as
    ``trajectory.relabel``. When it changes the effective verdict: proposed
    items distilled under the old verdict become superseded, approved ones are
    flagged for review (never deleted), and distillation reruns with the right
    prompt (enqueued after commit; for a MaTTS group member the group's
    contrast reruns) — unless retention purged its steps: then only the
    verdict and the items change. Raises Invalid for a label other than
    success/failure."""
    if label not in Label.values:
        raise Invalid(f"label must be one of {Label.values}, got {label!r}")
    t = Trajectory.objects.select_for_update().get(pk=trajectory.pk)
    old = t.verdict
    judgment = judgment_record(trajectory=t, source=JudgmentSource.HUMAN, label=label, rationale=reason, author=author)
    t.refresh_from_db()
    audit_record(
        action=AuditAction.TRAJECTORY_RELABEL,
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
    if _steps_purged(t):
        return judgment  # retention removed the steps: nothing left to distill again from
    if t.group_id and trajectory_move_many(
        Trajectory.objects.filter(bank_id=t.bank_id, group_id=t.group_id),
        from_=Status.DONE,
        to=Status.WAITING_GROUP,
        detail=f"Re-contrasting: {note}",
    ):
        enqueue_on_commit("trajectories.distill_group", t.bank_id, t.group_id, True)
        return judgment
    if t.status != Status.WAITING_GROUP:
        trajectory_move(t.pk, from_=t.status, to=Status.JUDGED, detail=f"Re-distilling: {note}")
        trajectory_enqueue(t.pk)
    return judgment


def _steps_purged(t: Trajectory) -> bool:
    """Whether the bank's retention purged the steps of ``t`` (or of a member of its MaTTS group)."""
    if t.steps_purged:
        return True
    return bool(t.group_id) and (
        Trajectory.objects.filter(bank_id=t.bank_id, group_id=t.group_id, raw__isnull=True).exists()
    )
