"""The one way a stage asks the LLM: what it asks, how its failures read in
``status_detail``, and what becomes of the rows when the LLM fails.

The LLM is called outside any transaction: a transient LLM error hands the
rows back to the state before the stage and re-raises for the Celery task to
retry; a permanent one, or an answer still unparseable after one reminder,
ends in ``needs_attention`` with the reason — never a guessed label."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TypeVar

from django.db.models import F, QuerySet

from trajectories.models import Status, Trajectory
from trajectories.pipeline.budget import budget_park_rows
from trajectories.pipeline.llm import chat
from trajectories.pipeline.llm_errors import LLMBudgetSpent, LLMPermanentError, LLMTransientError
from trajectories.pipeline.parsing import parse_memory_items
from trajectories.pipeline.prompting import excerpt
from trajectories.pipeline.transitions import trajectory_move_many

log = logging.getLogger(__name__)

JUDGE_REMINDER = (
    "I could not find an explicit verdict in your answer. Reply with only this JSON object and nothing else: "
    '{"verdict": "success" or "failure", "rationale": "..."}'
)
DISTILL_REMINDER = (
    "I could not find complete memory items in your answer. Write them now, each with a Title, a Description "
    "and a Content section, in the '# Memory Item N' format asked for."
)

T = TypeVar("T")


@dataclass(frozen=True)
class LLMCall:
    """What a stage asks and how its failures read in ``status_detail``."""

    doing: str  # "LLM judge": "<doing> failed transiently, will retry: …", "<doing> error: …"
    who: str  # "judge": "The <who> (model, version) gave no <expected> after a retry. …"
    expected: str  # "parseable verdict"
    reminder: str  # sent once when the first answer has nothing parseable
    attempts: str  # the row's counter of this stage's transient failures (its own retry budget)
    purpose: str = "distill"  # the stage its tokens count under (LLMStage) and the LLM metrics' purpose label


JUDGE_CALL = LLMCall(
    doing="LLM judge",
    who="judge",
    expected="parseable verdict",
    reminder=JUDGE_REMINDER,
    attempts="judge_attempts",
    purpose="judge",
)
DISTILL_CALL = LLMCall(
    doing="Distillation",
    who="distiller",
    expected="complete memory item",
    reminder=DISTILL_REMINDER,
    attempts="distill_attempts",
)
CONTRAST_CALL = LLMCall(
    doing="Contrast distillation",
    who="distiller",
    expected="complete memory item",
    reminder=DISTILL_REMINDER,
    attempts="contrast_attempts",
    purpose="matts",
)
# Distilling a trajectory with its refinements (MaTTS sequential): a distillation counted as MaTTS.
SEQUENTIAL_CALL = replace(DISTILL_CALL, purpose="matts")


def llm_ask(
    call: LLMCall,
    *,
    rows: QuerySet[Trajectory],
    running: str,
    back_to: str,
    model: str,
    version: str,
    prompt: str,
    parse: Callable[[str], T | None],
    bank_id: int,
    trajectory_ids: list[int],
    budgeted: bool = True,
) -> T | None:
    """Ask ``model``; when ``parse`` finds nothing in the answer, remind it once.
    Returns the parsed answer, or None after moving ``rows`` (those still
    ``running``) to ``needs_attention``: on a permanent LLM error, or when the
    second answer is unparseable too; or after parking them, saying so, when
    the bank's daily token budget cannot cover a call (none is sent). On a transient error the rows go back to
    ``back_to`` with the stage's failure counted, and LLMTransientError is
    re-raised (``exc.call`` names the stage) for the task to retry. The tokens count for ``bank_id`` and
    ``trajectory_ids`` (the rows') under the call's stage; ``budgeted=False`` when the caller read that
    the bank has no daily budget (budget_is_set)."""
    messages = [{"role": "user", "content": prompt}]
    counted = {"purpose": call.purpose, "bank_id": bank_id, "trajectory_ids": trajectory_ids, "budgeted": budgeted}
    try:
        answer = chat(model=model, messages=messages, **counted)
        parsed = parse(answer)
        if parsed is None:
            log.info("%s answer had nothing parseable; asking once more (%s)", call.who, version)
            messages += [
                {"role": "assistant", "content": answer or "(empty)"},
                {"role": "user", "content": call.reminder},
            ]
            answer = chat(model=model, messages=messages, **counted)
            parsed = parse(answer)
    except LLMTransientError as exc:
        trajectory_move_many(
            rows,
            from_=running,
            to=back_to,
            detail=f"{call.doing} failed transiently, will retry: {exc}",
            also={call.attempts: F(call.attempts) + 1},
        )
        exc.call = call
        raise
    except LLMBudgetSpent:
        budget_park_rows(rows, running=running, back_to=back_to)
        return None
    except LLMPermanentError as exc:
        trajectory_move_many(rows, from_=running, to=Status.NEEDS_ATTENTION, detail=f"{call.doing} error: {exc}")
        return None
    if parsed is None:
        trajectory_move_many(
            rows,
            from_=running,
            to=Status.NEEDS_ATTENTION,
            detail=f"The {call.who} ({model}, {version}) gave no {call.expected} after a retry. "
            f"Its answer began: {excerpt(answer)}",
        )
    return parsed


def items_parser(max_items: int):
    """An answer's memory items (at most ``max_items``), or None when it has none."""
    return lambda answer: parse_memory_items(answer, max_items=max_items) or None
