"""Every method of the agent API, written once: ``Endpoints`` holds them as
operations (operations.py), and ``Client`` (client.py) and ``AsyncClient``
(async_client.py) each turn every one into a method of their flavour when the
class is defined. A method added here is on both clients, with the same
signature, docstring and errors."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from reasoningbank_client.base import PAGE_SIZE, api_path
from reasoningbank_client.errors import WaitTimeoutError
from reasoningbank_client.eval_endpoints import EvaluationEndpoints
from reasoningbank_client.operations import Emit, Op, Sleep, Stream, endpoint, operations, stream
from reasoningbank_client.types import (
    SETTLED_STATUSES,
    BatchResult,
    Impact,
    MemoryItem,
    MemoryPage,
    Recorded,
    Retrieval,
    ReviewItem,
    ReviewPage,
    TokenInfo,
    Trajectory,
)


class Endpoints(EvaluationEndpoints):
    """The API's methods as operations; a flavour (``Client``, ``AsyncClient``) defines ``_http_class``,
    ``_perform``, ``_stream`` and ``_method`` (which makes one of its methods from an operation)."""

    _http_class: Callable[..., Any]
    _method: Callable[[endpoint | stream], Callable[..., Any]]

    def __init_subclass__(cls, **kwargs: Any):
        super().__init_subclass__(**kwargs)
        if "_method" in vars(cls):  # a flavour: every operation becomes one of its methods
            for name, operation in operations(cls).items():
                method = cls._method(operation)
                method.__module__, method.__qualname__ = cls.__module__, f"{cls.__qualname__}.{name}"
                setattr(cls, name, method)

    def __init__(self, url: str | None = None, token: str | None = None, **kwargs: Any):
        transport = kwargs.pop("transport", None)
        super().__init__(url, token, **kwargs)
        self._http = self._http_class(
            base_url=self.base_url, headers=self._headers, timeout=self._timeout, transport=transport
        )

    @endpoint
    def retrieve(
        self,
        query: str,
        k: int | None = None,
        task_id: str | None = None,
        filters: Mapping[str, Any] | None = None,
        run_id: str | None = None,
        include_served: bool = False,
    ) -> Op[Retrieval]:
        """Approved memories most relevant to ``query`` and a ``system_block`` for the system prompt.
        With ``run_id`` (a ``Retrieval.run_id``), a later step of that run: same arm, and items already
        served in the run are left out unless ``include_served``."""
        body = self._retrieve_body(query, k, task_id, filters, run_id, include_served)
        return Retrieval.from_dict((yield from self._request("POST", "retrieve", json=body)))

    @endpoint
    def record(
        self,
        task: str,
        *,
        steps: list[Any] | None = None,
        messages: Any = None,
        final_answer: str | None = None,
        outcome: str | None = None,
        reward: float | None = None,
        retrieval_id: str | None = None,
        task_id: str | None = None,
        group_id: str | None = None,
        group_size: int | None = None,
        agent: str | None = None,
        metadata: Mapping[str, Any] | None = None,
        external_id: str | None = None,
        system: Any = None,
        usage: Mapping[str, Any] | None = None,
    ) -> Op[Recorded]:
        """Send one finished run: ``steps=[…]`` or ``messages=…`` (chat-completions, Anthropic, an
        OpenAI Agents SDK run result, LangChain messages), plus any of ``final_answer``, ``outcome``,
        ``reward``, ``retrieval_id``, ``task_id``, ``group_id``, ``group_size``, ``agent``,
        ``metadata``, ``system``, ``external_id`` (generated when omitted) and ``usage``
        (``{"prompt_tokens": …, "completion_tokens": …}``: the run's LLM tokens, for cost per arm)."""
        body = self._record_body(
            task,
            {
                "steps": steps,
                "messages": messages,
                "final_answer": final_answer,
                "outcome": outcome,
                "reward": reward,
                "retrieval_id": retrieval_id,
                "task_id": task_id,
                "group_id": group_id,
                "group_size": group_size,
                "agent": agent,
                "metadata": metadata,
                "external_id": external_id,
                "system": system,
                "usage": usage,
            },
        )
        return Recorded.from_dict((yield from self._request("POST", "trajectories", json=body)), body["external_id"])

    @endpoint
    def record_batch(self, trajectories: Iterable[Mapping[str, Any]]) -> Op[BatchResult]:
        """Send many runs (each a dict of ``record``'s arguments, ``task`` included); each
        succeeds or fails on its own."""
        bodies = self._batch_bodies(trajectories)
        data = yield from self._request("POST", "trajectories/batch", json={"trajectories": bodies})
        return BatchResult.from_dict(data, [b["external_id"] for b in bodies])

    @endpoint
    def trajectory(self, trajectory_id: str) -> Op[Trajectory]:
        """A trajectory's status, verdict, judgments and derived items."""
        return Trajectory.from_dict((yield from self._request("GET", api_path("trajectories", trajectory_id))))

    @endpoint
    def wait(
        self,
        trajectory_id: str,
        timeout: float = 120.0,
        *,
        interval: float = 1.0,
        until: Iterable[str] = SETTLED_STATUSES,
    ) -> Op[Trajectory]:
        """Poll until the trajectory reaches a status in ``until`` (default: done,
        needs_attention, awaiting_llm); raise ``WaitTimeoutError`` after ``timeout`` seconds."""
        targets = frozenset(until)
        deadline = time.monotonic() + timeout
        while True:
            current = yield from Endpoints.trajectory.op(self, trajectory_id)
            if current.status in targets:
                return current
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise WaitTimeoutError(
                    f"trajectory {trajectory_id} still '{current.status}' after {timeout:g} s", trajectory=current
                )
            yield Sleep(min(interval, remaining))
            interval = min(interval * 1.5, 5.0)

    @endpoint
    def memories_page(self, limit: int = 20, offset: int = 0) -> Op[MemoryPage]:
        """One page of approved memories (``limit`` 1–100)."""
        return MemoryPage.from_dict(
            (yield from self._request("GET", "memories", params={"limit": limit, "offset": offset}))
        )

    @stream
    def memories(self, page_size: int = PAGE_SIZE) -> Stream[MemoryItem]:
        """Every approved memory of the bank, newest approval first, fetched page by page."""
        offset = 0
        while True:
            page = yield from Endpoints.memories_page.op(self, page_size, offset)
            for item in page.items:
                yield Emit(item)
            offset += len(page.items)
            if not page.items or offset >= page.count:
                return

    @endpoint
    def memory(self, memory_id: str) -> Op[MemoryItem]:
        """One memory the bank serves."""
        return MemoryItem.from_dict((yield from self._request("GET", api_path("memories", memory_id))))

    @endpoint
    def impact(self, days: int | None = None) -> Op[Impact]:
        """Treatment vs holdout success rates over the last ``days`` (all time when None)."""
        return Impact.from_dict((yield from self._request("GET", "impact", params={"days": days} if days else None)))

    @endpoint
    def token(self) -> Op[TokenInfo]:
        """The calling token's bank, scopes and limits."""
        return TokenInfo.from_dict((yield from self._request("GET", "token")))

    # --- review (a token with the ``review`` scope) ---------------------------------------------------
    @endpoint
    def review_queue(self, limit: int = 20, offset: int = 0, **filters: Any) -> Op[ReviewPage]:
        """One page of proposed items, oldest first. ``filters``: q, origin, verdict,
        agent, date_from, date_to (ISO dates), has_duplicate."""
        params = self._review_params(limit, offset, filters)
        return ReviewPage.from_dict((yield from self._request("GET", "review/items", params=params)))

    @endpoint
    def review_item(self, item_id: str) -> Op[ReviewItem]:
        """One item (any status) with its source trajectories and near-duplicates."""
        return ReviewItem.from_dict((yield from self._request("GET", api_path("review", "items", item_id))))

    @endpoint
    def approve_item(self, item_id: str, **options: Any) -> Op[ReviewItem]:
        """Approve (a no-op on an approved item). ``options`` go into the request body as given."""
        path = api_path("review", "items", item_id, "approve")
        return ReviewItem.from_dict((yield from self._request("POST", path, json=options)))

    @endpoint
    def reject_item(self, item_id: str, reason: str, **options: Any) -> Op[ReviewItem]:
        """Reject a proposed item; ``reason`` is required."""
        path = api_path("review", "items", item_id, "reject")
        return ReviewItem.from_dict((yield from self._request("POST", path, json={"reason": reason, **options})))

    @endpoint
    def edit_item(
        self,
        item_id: str,
        *,
        title: str | None = None,
        description: str | None = None,
        content: str | None = None,
        tags: Iterable[str] | None = None,
        note: str | None = None,
        **options: Any,
    ) -> Op[ReviewItem]:
        """Change the text or tags (None leaves a field as it is)."""
        body = self._edit_body(
            {"title": title, "description": description, "content": content, "tags": tags, "note": note, **options}
        )
        return ReviewItem.from_dict(
            (yield from self._request("PATCH", api_path("review", "items", item_id), json=body))
        )
