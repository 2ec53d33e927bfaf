"""``client.evaluate(evaluation_id, agent)``: run an evaluation's tries through the team's own agent.

Each worker (``parallel`` of them) loops: claim the run's next try (``next_try``), hand the try's JSON
(a dict: the task, the arm, ``system_block``, ``memories``, ``extra_tokens``, …) to ``agent``, and
record what it returns: ``{"final_answer", "steps" | "messages", "system"?, "outcome"?, "usage"?,
"metadata"?}``.
When the agent raises, or returns anything else, the try is recorded as a failure with the error as its
last step; so is an answer the service refuses (a 4xx naming the problem). It ends when no try is left
to claim: ``done`` when every try is recorded, else the tries left are claimed by another harness (they
are offered again when their lease ends). ``KeyboardInterrupt`` (and cancellation) stops at once: the
tries in progress are not recorded, and are offered again after their lease. Any other error (the run
was cancelled, the service cannot be reached) stops claiming; the tries in progress are still recorded,
then the error is raised."""

from __future__ import annotations

import inspect
import threading
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from reasoningbank_client.errors import BadRequestError, ConflictError, PayloadTooLargeError, ValidationError
from reasoningbank_client.eval_endpoints import try_body
from reasoningbank_client.eval_types import EvaluationSummary, EvaluationTry, TryRecorded, TryReport

if TYPE_CHECKING:
    from reasoningbank_client.async_client import AsyncClient
    from reasoningbank_client.client import Client

Agent = Callable[[dict[str, Any]], Any]
OnTry = Callable[[TryReport], Any]

RESULT_KEYS = ("final_answer", "steps", "messages", "system", "outcome", "usage", "metadata")
REFUSED = (BadRequestError, PayloadTooLargeError, ValidationError)  # the service refused the agent's answer


class AgentError(Exception):
    """The agent failed a try (raised, exited non-zero, answered something unreadable): recorded as a failure."""


def result_body(result: Any) -> dict[str, Any]:
    """The try's record body from what the agent returned; AgentError saying what is wrong with it."""
    if not isinstance(result, Mapping):
        raise AgentError(f"the agent must answer one JSON object, got {type(result).__name__}")
    unknown = sorted(set(result) - set(RESULT_KEYS))
    if unknown:
        raise AgentError(
            f"unknown field(s) {', '.join(map(repr, unknown))} in the agent's answer; known: {', '.join(RESULT_KEYS)}"
        )
    checks = {
        "final_answer": (str, "a string"),
        "steps": (list, "a list of steps"),
        "messages": (list, "a list of messages"),
        "usage": (Mapping, "an object {prompt_tokens, completion_tokens}"),
        "metadata": (Mapping, "an object"),
    }
    for key, (kind, what) in checks.items():
        if result.get(key) is not None and not isinstance(result[key], kind):
            raise AgentError(f"{key} must be {what}, got {type(result[key]).__name__}")
    if result.get("outcome") not in (None, "success", "failure"):
        raise AgentError(f"outcome must be 'success' or 'failure', got {result['outcome']!r}")
    try:
        return try_body(**{key: result.get(key) for key in RESULT_KEYS})
    except (TypeError, ValueError) as exc:  # messages in no shape the adapters read
        raise AgentError(f"unreadable messages: {exc}") from exc


def failure_body(error: str, *, metadata: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """A failed try: no answer, the error as its one step and in the metadata."""
    return {
        "steps": [{"error": error}],
        "final_answer": "",
        "outcome": "failure",
        "metadata": {**(metadata or {}), "error": error},
    }


def describe(exc: BaseException) -> str:
    return str(exc) if isinstance(exc, AgentError) else f"{type(exc).__name__}: {exc}"


class _State:
    """What the workers share: the summary, whether to stop claiming, and the first error."""

    def __init__(self, evaluation_id: str):
        self.summary = EvaluationSummary(evaluation=evaluation_id)
        self.lock = threading.Lock()
        self.stop = False  # claim no more tries
        self.interrupted = False  # and record none of those in progress
        self.error: BaseException | None = None

    def no_more(self, done: bool, message: str) -> None:
        with self.lock:
            self.summary.done = self.summary.done or done
            self.summary.message = self.summary.message or message

    def failed(self, exc: BaseException) -> None:
        with self.lock:
            self.stop = True
            self.error = self.error or exc

    def counted(self, report: TryReport) -> None:
        with self.lock:
            if report.recorded is None:
                self.summary.already_recorded += 1
                return
            self.summary.recorded += 1
            self.summary.failed += report.error is not None
            self.summary.progress = report.recorded.progress


def _recorded_or_none(call: Callable[[], TryRecorded]) -> TryRecorded | None:
    try:
        return call()
    except ConflictError as exc:
        if exc.code == "try_recorded":
            return None
        raise


def evaluate_sync(
    client: Client, evaluation_id: str, agent: Agent, *, parallel: int = 1, on_try: OnTry | None = None
) -> EvaluationSummary:
    """``Client.evaluate``: ``parallel`` worker threads; see the module's docstring."""
    if parallel < 1:
        raise ValueError("parallel must be at least 1")
    state = _State(evaluation_id)

    def record(attempt: EvaluationTry, body: dict[str, Any]) -> TryRecorded | None:
        return _recorded_or_none(lambda: client.record_try(evaluation_id, attempt.id, **body))

    def run_one(attempt: EvaluationTry) -> None:
        error = None
        try:
            body = result_body(agent(attempt.raw))
        except Exception as exc:
            error, body = describe(exc), failure_body(describe(exc))
        if state.interrupted:
            return
        try:
            recorded = record(attempt, body)
        except REFUSED as exc:
            error = f"the service refused the agent's answer: {exc.detail}"
            recorded = record(attempt, failure_body(error))
        report = TryReport(try_=attempt, recorded=recorded, error=error)
        state.counted(report)
        if on_try is not None:
            on_try(report)

    def worker() -> None:
        try:
            while not state.stop:
                claimed = client.next_try(evaluation_id)
                if claimed.try_ is None:
                    state.no_more(claimed.done, claimed.message)
                    return
                with state.lock:
                    state.summary.ran += 1
                run_one(claimed.try_)
        except BaseException as exc:  # handed to the caller's thread
            state.failed(exc)

    threads = [threading.Thread(target=worker, name=f"rb-eval-{n}", daemon=True) for n in range(parallel)]
    for thread in threads:
        thread.start()
    try:
        for thread in threads:
            while thread.is_alive():
                thread.join(0.2)
    except KeyboardInterrupt:
        state.stop = state.interrupted = True
        stop = getattr(agent, "interrupt", None)
        if callable(stop):
            stop()
        raise
    if state.error is not None:
        raise state.error
    return _finished(state, client.evaluation(evaluation_id))


def _finished(state: _State, evaluation: Any) -> EvaluationSummary:
    summary = state.summary
    summary.progress = evaluation.progress
    summary.done = evaluation.progress.total > 0 and evaluation.progress.recorded >= evaluation.progress.total
    return summary


async def evaluate_async(
    client: AsyncClient, evaluation_id: str, agent: Agent, *, parallel: int = 1, on_try: OnTry | None = None
) -> EvaluationSummary:
    """``AsyncClient.evaluate``: ``parallel`` tasks; an async agent is awaited, a plain one runs in a thread."""
    import anyio  # the async client's own dependency

    if parallel < 1:
        raise ValueError("parallel must be at least 1")
    state = _State(evaluation_id)
    is_async = inspect.iscoroutinefunction(agent) or inspect.iscoroutinefunction(type(agent).__call__)

    async def call(attempt: EvaluationTry) -> Any:
        if is_async:
            return await agent(attempt.raw)
        return await anyio.to_thread.run_sync(agent, attempt.raw)

    async def record(attempt: EvaluationTry, body: dict[str, Any]) -> TryRecorded | None:
        try:
            return await client.record_try(evaluation_id, attempt.id, **body)
        except ConflictError as exc:
            if exc.code == "try_recorded":
                return None
            raise

    async def run_one(attempt: EvaluationTry) -> None:
        error = None
        try:
            body = result_body(await call(attempt))
        except Exception as exc:
            error, body = describe(exc), failure_body(describe(exc))
        try:
            recorded = await record(attempt, body)
        except REFUSED as exc:
            error = f"the service refused the agent's answer: {exc.detail}"
            recorded = await record(attempt, failure_body(error))
        report = TryReport(try_=attempt, recorded=recorded, error=error)
        state.counted(report)
        if on_try is not None:
            answer = on_try(report)
            if inspect.isawaitable(answer):
                await answer

    async def worker() -> None:
        try:
            while not state.stop:
                claimed = await client.next_try(evaluation_id)
                if claimed.try_ is None:
                    state.no_more(claimed.done, claimed.message)
                    return
                state.summary.ran += 1
                await run_one(claimed.try_)
        except Exception as exc:
            state.failed(exc)

    async with anyio.create_task_group() as group:
        for _ in range(parallel):
            group.start_soon(worker)
    if state.error is not None:
        raise state.error
    return _finished(state, await client.evaluation(evaluation_id))
