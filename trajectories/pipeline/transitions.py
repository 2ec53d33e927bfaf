"""The trajectory status machine: which status may move to which, declared
once in ``TRANSITIONS``, and the one function every move goes through.

A move is compare-and-set: ``filter(status__in=from_).update(status=to, …)``
changes only rows still in an expected status, so zero rows means another
worker (or a human) moved it first. Every move sets ``status``,
``status_detail`` and ``updated_at`` together; the sweeper reads
``updated_at`` to find rows a dead worker left behind. A move the table does
not declare is a bug and raises ``IllegalTransition`` before touching a row."""

from __future__ import annotations

from collections.abc import Iterable

from django.db import connection, transaction
from django.db.models import QuerySet
from django.utils import timezone

from reasoningbank_site.commits import commit_without_waiting_for_disk
from trajectories.models import Status, Trajectory
from trajectories.pipeline.events import needs_attention_move
from trajectories.pipeline.held import TAKEN_BY

S = Status

TRANSITIONS: dict[str, frozenset[str]] = {
    # A verdict (agent or human) skips the judge; no LLM endpoint parks it.
    S.RECEIVED: frozenset({S.JUDGING, S.JUDGED, S.AWAITING_LLM, S.NEEDS_ATTENTION}),
    S.AWAITING_LLM: frozenset({S.JUDGING, S.JUDGED, S.NEEDS_ATTENTION}),
    # Back to received: a transient LLM error or the sweeper (worker lost).
    S.JUDGING: frozenset({S.JUDGED, S.RECEIVED, S.NEEDS_ATTENTION}),
    # judged → judged: a human relabel re-distills; done: a trajectory that does not learn (an evaluation try).
    S.JUDGED: frozenset({S.DISTILLING, S.WAITING_GROUP, S.AWAITING_LLM, S.JUDGED, S.DONE, S.NEEDS_ATTENTION}),
    # Back to judged / waiting_group: a transient LLM error or the sweeper; judged: a relabel.
    S.DISTILLING: frozenset({S.DONE, S.JUDGED, S.WAITING_GROUP, S.NEEDS_ATTENTION}),
    # waiting_group → waiting_group: a new note (no LLM yet); judged: its group closed with it alone.
    S.WAITING_GROUP: frozenset({S.DISTILLING, S.JUDGED, S.WAITING_GROUP, S.NEEDS_ATTENTION}),
    # A relabel re-distills a finished trajectory (or re-contrasts its group).
    S.DONE: frozenset({S.JUDGED, S.WAITING_GROUP}),
    # A human verdict rescues it; a later failure restates why it needs attention.
    S.NEEDS_ATTENTION: frozenset({S.JUDGED, S.NEEDS_ATTENTION}),
}

NOT_DONE = tuple(s for s in Status.values if s != Status.DONE)


class IllegalTransition(RuntimeError):
    """The code asked for a status move that ``TRANSITIONS`` does not declare (a bug)."""


def _checked(from_: str | Iterable[str], to: str) -> list[str]:
    """``from_`` as a list; raises IllegalTransition when a move from one of them to ``to`` is not declared."""
    sources = [from_] if isinstance(from_, str) else list(from_)
    illegal = [s for s in sources if to not in TRANSITIONS[s]]
    if illegal:
        raise IllegalTransition(f"a trajectory may not move from {', '.join(map(str, illegal))} to {to}")
    return sources


def trajectory_move_many(
    rows: QuerySet[Trajectory], *, from_: str | Iterable[str], to: str, detail: str = "", also: dict | None = None
) -> int:
    """Move every row of ``rows`` that is still in one of ``from_`` to ``to``
    with ``detail`` (and the fields in ``also``), in one UPDATE; return how
    many moved. A move to awaiting_llm clears ``enqueued_at``: nothing is
    queued for a parked row. Raises IllegalTransition when a move from one
    of ``from_`` to ``to`` is not in TRANSITIONS."""
    sources = _checked(from_, to)
    fields = {"enqueued_at": None} if to == Status.AWAITING_LLM else {}
    fields.update(_taken(to))
    fields.update(also or {})
    values = {"status": to, "status_detail": detail, "updated_at": timezone.now(), **fields}
    if to == Status.NEEDS_ATTENTION:  # announced to webhooks
        return needs_attention_move(rows.filter(status__in=sources), values)
    return rows.filter(status__in=sources).update(**values)


def trajectory_move(
    trajectory_id: int, *, from_: str | Iterable[str], to: str, detail: str = "", also: dict | None = None
) -> bool:
    """Compare-and-set one trajectory (see ``trajectory_move_many``): True
    when this caller moved it, False when it was no longer in ``from_``."""
    return _move_one(trajectory_id, sources=_checked(from_, to), to=to, detail=detail, also=also)


def trajectory_move_on(
    trajectory_id: int, *, from_: str | Iterable[str], via: str, to: str, detail: str = "", also: dict | None = None
) -> bool:
    """Two declared moves as one compare-and-set UPDATE: from one of ``from_``
    to ``via`` and on to ``to`` (with ``detail`` and the fields in ``also``),
    for a worker that goes on at once with the next stage (judged, then taken
    for distillation): inside its transaction the row is never seen in
    ``via``. True when this caller moved it. Raises IllegalTransition when
    either move is not declared."""
    sources = _checked(from_, via)
    _checked(via, to)
    return _move_one(trajectory_id, sources=sources, to=to, detail=detail, also=also, parks=False)


def trajectory_take(trajectory_id: int, *, from_: str | Iterable[str], to: str, detail: str = "") -> bool:
    """``trajectory_move`` for the move by which a stage takes a row before it
    asks the LLM (to judging, to distilling), committed without waiting for the
    write-ahead log to reach the disk (commit_without_waiting_for_disk: the
    flush is most of such a move's cost). Other workers see it at once all the
    same; only a database crash in the next fraction of a second can lose it,
    and a lost move leaves the row in the status before it, as if this worker
    had died before taking it: the stage's status check under its row lock
    then drops its result, and the sweeper or the task's redelivery runs the
    stage again. The stages' results are committed durably as ever. Inside a
    caller's transaction it is a plain move (that transaction's commit is not
    this move's to weaken)."""
    sources = _checked(from_, to)
    if connection.in_atomic_block:
        return _move_one(trajectory_id, sources=sources, to=to, detail=detail)
    with transaction.atomic():
        commit_without_waiting_for_disk()
        return _move_one(trajectory_id, sources=sources, to=to, detail=detail)


def _move_one(
    trajectory_id: int, *, sources: list[str], to: str, detail: str, also: dict | None = None, parks: bool = True
) -> bool:
    """The compare-and-set UPDATE of one row, its sources checked: what
    ``trajectory_move_many`` writes (``parks``: a move to awaiting_llm clears
    ``enqueued_at``)."""
    if not sources:
        return False
    fields = {"enqueued_at": None} if parks and to == Status.AWAITING_LLM else {}
    fields.update(_taken(to))
    values = {"status": to, "status_detail": detail, "updated_at": timezone.now(), **fields, **(also or {})}
    rows = Trajectory.objects.filter(pk=trajectory_id, status__in=sources)
    if to == Status.NEEDS_ATTENTION:  # announced to webhooks
        return needs_attention_move(rows, values) == 1
    return rows.update(**values) == 1


def _taken(to: str) -> dict:
    """A move into a running stage records the backend that made it (trajectories.pipeline.held)."""
    return {"taken_by": TAKEN_BY} if to in (Status.JUDGING, Status.DISTILLING) else {}


def trajectory_mark_needs_attention(*, trajectory_id: int, detail: str) -> None:
    """Put a trajectory (and, if it waits in a MaTTS group, the group's
    waiting members) in ``needs_attention`` with ``detail``. A finished
    trajectory is left alone."""
    t = Trajectory.objects.filter(pk=trajectory_id).first()
    if t is None or t.status == Status.DONE:
        return
    if t.group_id and t.status == Status.WAITING_GROUP:
        trajectory_move_many(
            Trajectory.objects.filter(bank_id=t.bank_id, group_id=t.group_id),
            from_=Status.WAITING_GROUP,
            to=Status.NEEDS_ATTENTION,
            detail=detail,
        )
    trajectory_move(t.pk, from_=NOT_DONE, to=Status.NEEDS_ATTENTION, detail=detail)
