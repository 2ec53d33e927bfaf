"""The evaluation endpoints as operations (see operations.py): task sets and evaluation runs (a token
with the ``review`` scope), and the two a harness calls for every try, ``next_try`` and ``record_try``
(the ``ingest`` scope). ``Endpoints`` inherits them, so ``Client`` and ``AsyncClient`` both have them."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from reasoningbank_client.adapters import to_messages
from reasoningbank_client.base import _Base, api_path
from reasoningbank_client.eval_types import Evaluation, NextTry, TaskSet, TryRecorded
from reasoningbank_client.operations import Op, endpoint


def try_body(
    *,
    steps: list[Any] | None = None,
    messages: Any = None,
    final_answer: str | None = None,
    outcome: str | None = None,
    usage: Mapping[str, Any] | None = None,
    metadata: Mapping[str, Any] | None = None,
    system: Any = None,
) -> dict[str, Any]:
    """The JSON body recording one try. ``messages`` may be anything ``adapters.to_messages`` reads;
    ``system`` is the system prompt sent apart from them (Anthropic's convention)."""
    if messages is not None:
        messages, guessed_answer = to_messages(messages)
        if final_answer is None:
            final_answer = guessed_answer
    if steps is not None:
        steps = [dataclasses.asdict(s) if dataclasses.is_dataclass(s) else s for s in steps]
    body = {
        "steps": steps,
        "messages": messages,
        "system": system,
        "final_answer": final_answer,
        "outcome": outcome,
        "usage": dict(usage) if usage is not None else None,
        "metadata": dict(metadata) if metadata is not None else None,
    }
    return {key: value for key, value in body.items() if value is not None}


def jsonl(tasks: Iterable[Mapping[str, Any]] | bytes | str) -> bytes:
    """A task set's JSONL body: given as is (bytes or text), or one line per task mapping."""
    if isinstance(tasks, bytes):
        return tasks
    if isinstance(tasks, str):
        return tasks.encode()
    return "".join(json.dumps(dict(task), ensure_ascii=False) + "\n" for task in tasks).encode()


class EvaluationEndpoints(_Base):
    # --- task sets (scope ``review``) ------------------------------------------------------------------
    @endpoint
    def task_sets(self) -> Op[list[TaskSet]]:
        """The bank's task sets, newest first."""
        data = yield from self._request("GET", "task-sets")
        return [TaskSet.from_dict(row) for row in data.get("task_sets") or []]

    @endpoint
    def task_set(self, ref: str) -> Op[TaskSet]:
        """One task set (by id or name) with its ``tasks``."""
        return TaskSet.from_dict((yield from self._request("GET", api_path("task-sets", ref))))

    @endpoint
    def create_task_set(self, name: str, filters: Mapping[str, Any], description: str = "") -> Op[TaskSet]:
        """A task set built from the bank's past trajectories that ``filters`` pick (see docs/evaluation.md)."""
        body = {"name": name, "description": description, "filters": dict(filters)}
        return TaskSet.from_dict((yield from self._request("POST", "task-sets", json=body)))

    @endpoint
    def upload_task_set(
        self, name: str, tasks: Iterable[Mapping[str, Any]] | bytes | str, description: str = ""
    ) -> Op[TaskSet]:
        """A task set from JSONL (bytes or text), or from task mappings, one per line: ``{"id", "task",
        "metadata"?, "check"?: {"type": "contains"|"equals"|"regex", "value", "ignore_case"?}, "task_id"?}``."""
        params = {"name": name, **({"description": description} if description else {})}
        data = yield from self._request(
            "POST",
            "task-sets/upload",
            params=params,
            content=jsonl(tasks),
            headers={"Content-Type": "application/x-ndjson"},
        )
        return TaskSet.from_dict(data)

    # --- evaluation runs (scope ``review``; reading one: any token of the bank) -------------------------
    @endpoint
    def create_evaluation(
        self,
        task_set: str,
        arms: Sequence[str],
        k: int,
        *,
        release: int | None = None,
        token_budget: int | None = None,
        note: str = "",
    ) -> Op[Evaluation]:
        """A run of ``task_set`` (id or name) in ``arms`` (of candidate, production, none, control), ``k``
        tries per task and arm; ``release`` is the candidate's release number."""
        body = {
            "task_set": task_set,
            "arms": list(arms),
            "release": release,
            "k": k,
            "token_budget": token_budget,
            "note": note,
        }
        return Evaluation.from_dict((yield from self._request("POST", "evaluations", json=body)))

    @endpoint
    def evaluations(self) -> Op[list[Evaluation]]:
        """The bank's evaluation runs, newest first (without their results)."""
        data = yield from self._request("GET", "evaluations")
        return [Evaluation.from_dict(row) for row in data.get("evaluations") or []]

    @endpoint
    def evaluation(self, evaluation_id: str) -> Op[Evaluation]:
        """One run: its state, progress and (once computed) results."""
        return Evaluation.from_dict((yield from self._request("GET", api_path("evaluations", evaluation_id))))

    @endpoint
    def cancel_evaluation(self, evaluation_id: str) -> Op[Evaluation]:
        """Stop a run: no more tries are handed out or recorded."""
        path = api_path("evaluations", evaluation_id, "cancel")
        return Evaluation.from_dict((yield from self._request("POST", path)))

    # --- the harness (scope ``ingest``) -------------------------------------------------------------------
    @endpoint
    def next_try(self, evaluation_id: str) -> Op[NextTry]:
        """Claim the run's next try (one not recorded, and not claimed within its lease). A claim whose
        answer is lost is offered again once its lease ends."""
        path = api_path("evaluations", evaluation_id, "next")
        return NextTry.from_dict((yield from self._request("POST", path)))

    @endpoint
    def record_try(
        self,
        evaluation_id: str,
        try_id: str,
        *,
        steps: list[Any] | None = None,
        messages: Any = None,
        final_answer: str | None = None,
        outcome: str | None = None,
        usage: Mapping[str, Any] | None = None,
        metadata: Mapping[str, Any] | None = None,
        system: Any = None,
    ) -> Op[TryRecorded]:
        """Record what the agent did in one try. ``ConflictError`` with code ``try_recorded`` when the try was
        recorded already, ``evaluation_finished`` when the run is no longer open."""
        body = try_body(
            steps=steps,
            messages=messages,
            final_answer=final_answer,
            outcome=outcome,
            usage=usage,
            metadata=metadata,
            system=system,
        )
        path = api_path("evaluations", evaluation_id, "tries", try_id)
        return TryRecorded.from_dict((yield from self._request("POST", path, json=body)))
