"""``Client``: the blocking client, one method per endpoint of the agent API,
with safe retries and typed errors. Its methods are endpoints.py's operations,
performed with blocking httpx and ``time.sleep`` (no event loop, so it also
works from inside a running one); ``AsyncClient`` (async_client.py) performs
the same operations awaitably."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any

import httpx

from reasoningbank_client.async_client import AsyncClient
from reasoningbank_client.base import api_base_url, api_path, trajectory_body
from reasoningbank_client.endpoints import Endpoints
from reasoningbank_client.eval_types import EvaluationSummary
from reasoningbank_client.harness import Agent, OnTry, evaluate_sync
from reasoningbank_client.operations import Action, Emit, Op, Sleep, Stream, advance, as_method, endpoint, stream
from reasoningbank_client.run import Run

__all__ = ["AsyncClient", "Client", "api_base_url", "api_path", "trajectory_body"]


class Client(Endpoints):
    """Blocking client. Configure by arguments or ``RB_URL`` / ``RB_TOKEN``::

    client = Client()                       # RB_URL, RB_TOKEN
    with client.run("Book a flight", task_id="t-17") as run:
        answer = my_agent(task, system=run.system_block)
        run.final_answer, run.outcome = answer, "success"
    """

    _http_class = httpx.Client

    def close(self) -> None:
        """Close the connections."""
        self._http.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def run(self, task: str, **kwargs: Any) -> Run:
        """``with client.run(task, task_id=…) as run:`` — retrieves on entry, records on exit."""
        return Run(self, task, **kwargs)

    def evaluate(
        self, evaluation_id: str, agent: Agent, *, parallel: int = 1, on_try: OnTry | None = None
    ) -> EvaluationSummary:
        """Run an evaluation's tries through ``agent(try: dict) -> dict`` (``{"final_answer", "steps" |
        "messages", "outcome"?, "usage"?, "metadata"?}``) until none is left to claim, ``parallel`` at a
        time; ``on_try(TryReport)`` after each recorded try. See harness.py."""
        return evaluate_sync(self, evaluation_id, agent, parallel=parallel, on_try=on_try)

    # --- performing operations ----------------------------------------------------------------------
    def _act(self, action: Action) -> tuple[Any, Exception | None]:
        """Do what an operation asked: (answer, error to throw into it)."""
        if isinstance(action, Sleep):
            time.sleep(action.seconds)
            return None, None
        try:
            request = self._http.request(
                action.method,
                action.path,
                json=action.json,
                params=action.params,
                content=action.content,
                headers=action.headers,
            )
            return request, None
        except httpx.TransportError as exc:
            return None, exc

    def _perform(self, op: Op[Any]) -> Any:
        answer, error = None, None
        while True:
            try:
                action = advance(op, answer, error)
            except StopIteration as done:
                return done.value
            answer, error = self._act(action)

    def _stream(self, op: Stream[Any]) -> Iterator[Any]:
        answer, error = None, None
        while True:
            try:
                action = advance(op, answer, error)
            except StopIteration:
                return
            if isinstance(action, Emit):
                answer, error = None, None
                yield action.value
            else:
                answer, error = self._act(action)

    @staticmethod
    def _method(operation: endpoint | stream) -> Callable[..., Any]:
        if isinstance(operation, stream):
            stream_op = operation.op

            def iterate(self: Client, *args: Any, **kwargs: Any) -> Iterator[Any]:
                return self._stream(stream_op(self, *args, **kwargs))

            return as_method(iterate, operation, Iterator)
        op = operation.op

        def call(self: Client, *args: Any, **kwargs: Any) -> Any:
            return self._perform(op(self, *args, **kwargs))

        return as_method(call, operation, Iterator)
