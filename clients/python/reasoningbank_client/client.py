"""``Client``: the blocking client, one method per endpoint of the agent API,
with safe retries and typed errors. ``AsyncClient`` (async_client.py) is the
same API, awaitable; both build requests and read answers in base.py."""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

import httpx

from reasoningbank_client.async_client import AsyncClient
from reasoningbank_client.base import PAGE_SIZE, _Base, api_base_url, api_path, trajectory_body
from reasoningbank_client.errors import WaitTimeoutError
from reasoningbank_client.retry import RETRY_STATUSES
from reasoningbank_client.run import Run
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

__all__ = ["AsyncClient", "Client", "api_base_url", "api_path", "trajectory_body"]


class Client(_Base):
    """Blocking client. Configure by arguments or ``RB_URL`` / ``RB_TOKEN``::

    client = Client()                       # RB_URL, RB_TOKEN
    with client.run("Book a flight", task_id="t-17") as run:
        answer = my_agent(task, system=run.system_block)
        run.final_answer, run.outcome = answer, "success"
    """

    def __init__(self, url: str | None = None, token: str | None = None, **kwargs: Any):
        transport = kwargs.pop("transport", None)
        super().__init__(url, token, **kwargs)
        self._http = httpx.Client(
            base_url=self.base_url, headers=self._headers, timeout=self._timeout, transport=transport
        )

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _send(self, method: str, path: str, *, json: Any = None, params: Mapping[str, Any] | None = None) -> Any:
        attempt, waited = 0, 0.0
        while True:
            attempt += 1
            try:
                response = self._http.request(method, path, json=json, params=params)
            except httpx.TransportError as exc:
                error, retry_after = self._connection_error(exc), None
            else:
                body, error, retry_after = self._read(response)
                if error is None:
                    return body
                if response.status_code not in RETRY_STATUSES:
                    raise error
            delay = self.retry.next_delay(attempt, waited, retry_after)
            if delay is None:
                raise error
            time.sleep(delay)
            waited += delay

    # --- endpoints --------------------------------------------------------------------------------
    def retrieve(
        self,
        query: str,
        k: int | None = None,
        task_id: str | None = None,
        filters: Mapping[str, Any] | None = None,
        run_id: str | None = None,
        include_served: bool = False,
    ) -> Retrieval:
        """Approved memories most relevant to ``query`` and a ``system_block`` for the system prompt.
        With ``run_id`` (a ``Retrieval.run_id``), a later step of that run: same arm, and items already
        served in the run are left out unless ``include_served``."""
        body = self._retrieve_body(query, k, task_id, filters, run_id, include_served)
        return Retrieval.from_dict(self._send("POST", "retrieve", json=body))

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
    ) -> Recorded:
        """Send one finished run: ``steps=[…]`` or ``messages=…`` (chat-completions, Anthropic, an
        OpenAI Agents SDK run result, LangChain messages), plus any of ``final_answer``, ``outcome``,
        ``reward``, ``retrieval_id``, ``task_id``, ``group_id``, ``group_size``, ``agent``,
        ``metadata``, ``system``, ``external_id`` (generated when omitted)."""
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
            },
        )
        return Recorded.from_dict(self._send("POST", "trajectories", json=body), body["external_id"])

    def record_batch(self, trajectories: Iterable[Mapping[str, Any]]) -> BatchResult:
        """Send many runs (each a dict of ``record``'s arguments, ``task`` included); each
        succeeds or fails on its own."""
        bodies = self._batch_bodies(trajectories)
        data = self._send("POST", "trajectories/batch", json={"trajectories": bodies})
        return BatchResult.from_dict(data, [b["external_id"] for b in bodies])

    def trajectory(self, trajectory_id: str) -> Trajectory:
        """A trajectory's status, verdict, judgments and derived items."""
        return Trajectory.from_dict(self._send("GET", api_path("trajectories", trajectory_id)))

    def wait(
        self,
        trajectory_id: str,
        timeout: float = 120.0,
        *,
        interval: float = 1.0,
        until: Iterable[str] = SETTLED_STATUSES,
    ) -> Trajectory:
        """Poll until the trajectory reaches a status in ``until`` (default: done,
        needs_attention, awaiting_llm); raise ``WaitTimeoutError`` after ``timeout`` seconds."""
        targets = frozenset(until)
        deadline = time.monotonic() + timeout
        while True:
            current = self.trajectory(trajectory_id)
            if current.status in targets:
                return current
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise WaitTimeoutError(
                    f"trajectory {trajectory_id} still '{current.status}' after {timeout:g} s", trajectory=current
                )
            time.sleep(min(interval, remaining))
            interval = min(interval * 1.5, 5.0)

    def memories_page(self, limit: int = 20, offset: int = 0) -> MemoryPage:
        """One page of approved memories (``limit`` 1–100)."""
        return MemoryPage.from_dict(self._send("GET", "memories", params={"limit": limit, "offset": offset}))

    def memories(self, page_size: int = PAGE_SIZE) -> Iterator[MemoryItem]:
        """Every approved memory of the bank, newest approval first, fetched page by page."""
        offset = 0
        while True:
            page = self.memories_page(page_size, offset)
            yield from page.items
            offset += len(page.items)
            if not page.items or offset >= page.count:
                return

    def memory(self, memory_id: str) -> MemoryItem:
        return MemoryItem.from_dict(self._send("GET", api_path("memories", memory_id)))

    def impact(self, days: int | None = None) -> Impact:
        """Treatment vs holdout success rates over the last ``days`` (all time when None)."""
        return Impact.from_dict(self._send("GET", "impact", params={"days": days} if days else None))

    def token(self) -> TokenInfo:
        """The calling token's bank, scopes and limits."""
        return TokenInfo.from_dict(self._send("GET", "token"))

    # --- review (a token with the ``review`` scope) ---------------------------------------------------
    def review_queue(self, limit: int = 20, offset: int = 0, **filters: Any) -> ReviewPage:
        """One page of proposed items, oldest first. ``filters``: q, origin, verdict,
        agent, date_from, date_to (ISO dates), has_duplicate."""
        return ReviewPage.from_dict(
            self._send("GET", "review/items", params=self._review_params(limit, offset, filters))
        )

    def review_item(self, item_id: str) -> ReviewItem:
        """One item (any status) with its source trajectories and near-duplicates."""
        return ReviewItem.from_dict(self._send("GET", api_path("review", "items", item_id)))

    def approve_item(self, item_id: str, **options: Any) -> ReviewItem:
        """Approve (a no-op on an approved item). ``options`` go into the request body as given."""
        return ReviewItem.from_dict(self._send("POST", api_path("review", "items", item_id, "approve"), json=options))

    def reject_item(self, item_id: str, reason: str, **options: Any) -> ReviewItem:
        """Reject a proposed item; ``reason`` is required."""
        return ReviewItem.from_dict(
            self._send("POST", api_path("review", "items", item_id, "reject"), json={"reason": reason, **options})
        )

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
    ) -> ReviewItem:
        """Change the text or tags (None leaves a field as it is)."""
        body = self._edit_body(
            {"title": title, "description": description, "content": content, "tags": tags, "note": note, **options}
        )
        return ReviewItem.from_dict(self._send("PATCH", api_path("review", "items", item_id), json=body))

    def run(self, task: str, **kwargs: Any) -> Run:
        """``with client.run(task, task_id=…) as run:`` — retrieves on entry, records on exit."""
        return Run(self, task, **kwargs)
