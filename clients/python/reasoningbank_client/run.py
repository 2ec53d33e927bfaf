"""``client.run(...)``: retrieve on entry, record on exit.

    with client.run("Buy the cheapest USB-C cable", task_id="shop-17") as run:
        answer = my_agent(task, system=run.system_block)   # run.items: the memories served
        run.step(thought="Search first", action="search('usb-c')", observation="12 results")
        hints = run.retrieve("12 results; the cheapest is out of stock")  # step-level: same run, new lessons
        run.final_answer = answer
        run.outcome = "success"                            # or leave None: the service's judge decides

On exit the run is recorded with the ``retrieval_id`` of the entry's
retrieval (so outcomes count toward the bank's lift). ``run.retrieve(observation)``
retrieves again at any step with the current observation as the query: in
the same run (the same arm), never serving an item the run already got, and
every retrieval is linked to the recorded trajectory. When the block raises
an ``Exception``, the run is recorded as a failure with the error as its
last step, and the exception propagates; a failure to record then is
logged, never raised over the original error. ``KeyboardInterrupt`` and
cancellation are not recorded."""

from __future__ import annotations

import logging
import uuid
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from reasoningbank_client.errors import RBError
from reasoningbank_client.types import MemoryItem, Recorded, Retrieval

if TYPE_CHECKING:
    from reasoningbank_client.async_client import AsyncClient
    from reasoningbank_client.client import Client

log = logging.getLogger("reasoningbank_client")


class _RunState:
    def __init__(
        self,
        task: str,
        *,
        task_id: str | None = None,
        k: int | None = None,
        filters: Mapping[str, Any] | None = None,
        retrieve: bool = True,
        agent: str | None = None,
        metadata: Mapping[str, Any] | None = None,
        group_id: str | None = None,
        group_size: int | None = None,
        external_id: str | None = None,
        usage: Mapping[str, Any] | None = None,
    ):
        self.task = task
        self.task_id = task_id
        self.k = k
        self.filters = filters
        self.should_retrieve = retrieve
        self.agent = agent
        self.metadata: dict[str, Any] = dict(metadata or {})
        self.group_id = group_id
        self.group_size = group_size
        self.external_id = external_id or str(uuid.uuid4())  # fixed up front: recording stays idempotent
        self.retrieval: Retrieval | None = None  # the run's first retrieval, recorded with the trajectory
        self.retrievals: list[Retrieval] = []  # every retrieval of the run, first one first
        self.steps: list[dict[str, Any]] = []
        self.messages: Any = None
        self.final_answer: str | None = None
        self.outcome: str | None = None
        self.reward: float | None = None
        # The run's LLM tokens, {"prompt_tokens": …, "completion_tokens": …}: set it before the block ends.
        self.usage: dict[str, Any] | None = dict(usage) if usage is not None else None
        self.recorded: Recorded | None = None

    @property
    def system_block(self) -> str:
        """The retrieved memories, ready for the system prompt ("" when none)."""
        return self.retrieval.system_block if self.retrieval else ""

    @property
    def items(self) -> list[MemoryItem]:
        return self.retrieval.items if self.retrieval else []

    @property
    def retrieval_id(self) -> str | None:
        return self.retrieval.retrieval_id if self.retrieval else None

    def step(
        self,
        thought: str | None = None,
        action: Any = None,
        observation: Any = None,
        *,
        tool: str | None = None,
        arguments: Any = None,
        error: str | bool | None = None,
        refinement: str | None = None,
    ) -> dict[str, Any]:
        """Add one native step (give at least one field)."""
        values = {
            "thought": thought,
            "action": action,
            "observation": observation,
            "tool": tool,
            "arguments": arguments,
            "error": error,
            "refinement": refinement,
        }
        step = {key: value for key, value in values.items() if value is not None}
        if not step:
            raise ValueError("a step needs at least one of thought, action, observation, tool, error, refinement")
        self.steps.append(step)
        return step

    def _retrieve_args(self) -> dict[str, Any]:
        return {"k": self.k, "task_id": self.task_id, "filters": self.filters}

    def _step_args(self, k: int | None, filters: Mapping[str, Any] | None, include_served: bool) -> dict[str, Any]:
        return {
            "k": self.k if k is None else k,
            "task_id": self.task_id,
            "filters": self.filters if filters is None else filters,
            "run_id": self.retrieval.run_id if self.retrieval else None,
            "include_served": include_served,
        }

    def _retrieved(self, retrieval: Retrieval) -> Retrieval:
        if self.retrieval is None:
            self.retrieval = retrieval
        self.retrievals.append(retrieval)
        return retrieval

    def _record_args(self, exc: BaseException | None) -> dict[str, Any]:
        metadata = dict(self.metadata)
        steps = list(self.steps)
        if exc is not None:
            error = f"{type(exc).__name__}: {exc}"
            metadata["error"] = error
            if self.messages is None:
                steps.append({"error": error})
        return {
            "steps": None if self.messages is not None else steps,
            "messages": self.messages,
            "final_answer": self.final_answer,
            "outcome": "failure" if exc is not None else self.outcome,
            "reward": self.reward,
            "retrieval_id": self.retrieval_id,
            "task_id": self.task_id,
            "group_id": self.group_id,
            "group_size": self.group_size,
            "agent": self.agent,
            "metadata": metadata or None,
            "external_id": self.external_id,
            "usage": self.usage,
        }


def _records(exc: BaseException | None) -> bool:
    return exc is None or isinstance(exc, Exception)


class Run(_RunState):
    def __init__(self, client: Client, task: str, **kwargs: Any):
        super().__init__(task, **kwargs)
        self._client = client

    def __enter__(self) -> Run:
        if self.should_retrieve:
            self._retrieved(self._client.retrieve(self.task, **self._retrieve_args()))
        return self

    def retrieve(
        self,
        observation: str,
        *,
        k: int | None = None,
        filters: Mapping[str, Any] | None = None,
        include_served: bool = False,
    ) -> Retrieval:
        """Retrieve again at this step, with ``observation`` as the query: in this run's arm, leaving
        out items the run was already served (unless ``include_served``). The first retrieval of a
        run opened with ``retrieve=False`` starts the run. ``k`` and ``filters`` default to the run's."""
        args = self._step_args(k, filters, include_served)
        return self._retrieved(self._client.retrieve(observation, **args))

    def __exit__(self, exc_type: Any, exc: BaseException | None, tb: Any) -> None:
        if not _records(exc):
            return
        try:
            self.recorded = self._client.record(self.task, **self._record_args(exc))
        except RBError:
            if exc is None:
                raise
            log.warning("could not record the failed run of %r", self.task[:80], exc_info=True)


class AsyncRun(_RunState):
    def __init__(self, client: AsyncClient, task: str, **kwargs: Any):
        super().__init__(task, **kwargs)
        self._client = client

    async def __aenter__(self) -> AsyncRun:
        if self.should_retrieve:
            self._retrieved(await self._client.retrieve(self.task, **self._retrieve_args()))
        return self

    async def retrieve(
        self,
        observation: str,
        *,
        k: int | None = None,
        filters: Mapping[str, Any] | None = None,
        include_served: bool = False,
    ) -> Retrieval:
        """As Run.retrieve."""
        args = self._step_args(k, filters, include_served)
        return self._retrieved(await self._client.retrieve(observation, **args))

    async def __aexit__(self, exc_type: Any, exc: BaseException | None, tb: Any) -> None:
        if not _records(exc):
            return
        try:
            self.recorded = await self._client.record(self.task, **self._record_args(exc))
        except RBError:
            if exc is None:
                raise
            log.warning("could not record the failed run of %r", self.task[:80], exc_info=True)
