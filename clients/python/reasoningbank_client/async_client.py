"""``AsyncClient``: the same API as ``Client``, awaitable. Its methods are
endpoints.py's operations, performed with ``httpx.AsyncClient`` and
``anyio.sleep`` (asyncio or trio)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

import anyio
import httpx

from reasoningbank_client.endpoints import Endpoints
from reasoningbank_client.eval_types import EvaluationSummary
from reasoningbank_client.harness import Agent, OnTry, evaluate_async
from reasoningbank_client.operations import Action, Emit, Op, Sleep, Stream, advance, as_method, endpoint, stream
from reasoningbank_client.run import AsyncRun


class AsyncClient(Endpoints):
    """The same API as ``Client``, awaitable (``memories()`` is an async iterator)."""

    _http_class = httpx.AsyncClient

    async def aclose(self) -> None:
        """Close the connections."""
        await self._http.aclose()

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    def run(self, task: str, **kwargs: Any) -> AsyncRun:
        """``async with aclient.run(task, task_id=…) as run:`` — retrieves on entry, records on exit."""
        return AsyncRun(self, task, **kwargs)

    async def evaluate(
        self, evaluation_id: str, agent: Agent, *, parallel: int = 1, on_try: OnTry | None = None
    ) -> EvaluationSummary:
        """As ``Client.evaluate``; ``agent`` may be async (awaited) or plain (run in a worker thread)."""
        return await evaluate_async(self, evaluation_id, agent, parallel=parallel, on_try=on_try)

    # --- performing operations ----------------------------------------------------------------------
    async def _act(self, action: Action) -> tuple[Any, Exception | None]:
        """Do what an operation asked: (answer, error to throw into it)."""
        if isinstance(action, Sleep):
            await anyio.sleep(action.seconds)
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
            return await request, None
        except httpx.TransportError as exc:
            return None, exc

    async def _perform(self, op: Op[Any]) -> Any:
        answer, error = None, None
        while True:
            try:
                action = advance(op, answer, error)
            except StopIteration as done:
                return done.value
            answer, error = await self._act(action)

    async def _stream(self, op: Stream[Any]) -> AsyncIterator[Any]:
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
                answer, error = await self._act(action)

    @staticmethod
    def _method(operation: endpoint | stream) -> Callable[..., Any]:
        if isinstance(operation, stream):
            stream_op = operation.op

            async def iterate(self: AsyncClient, *args: Any, **kwargs: Any) -> AsyncIterator[Any]:
                async for value in self._stream(stream_op(self, *args, **kwargs)):
                    yield value

            return as_method(iterate, operation, AsyncIterator)
        op = operation.op

        async def call(self: AsyncClient, *args: Any, **kwargs: Any) -> Any:
            return await self._perform(op(self, *args, **kwargs))

        return as_method(call, operation, AsyncIterator)
