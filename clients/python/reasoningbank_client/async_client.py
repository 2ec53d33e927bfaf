"""``AsyncClient``: the same API as ``Client``, awaitable."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Iterable, Mapping
from typing import Any

import anyio
import httpx

from reasoningbank_client.base import PAGE_SIZE, _Base, api_path
from reasoningbank_client.errors import WaitTimeoutError
from reasoningbank_client.retry import RETRY_STATUSES
from reasoningbank_client.run import AsyncRun
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


class AsyncClient(_Base):
    """The same API as ``Client``, awaitable (``memories()`` is an async iterator)."""

    def __init__(self, url: str | None = None, token: str | None = None, **kwargs: Any):
        transport = kwargs.pop("transport", None)
        super().__init__(url, token, **kwargs)
        self._http = httpx.AsyncClient(
            base_url=self.base_url, headers=self._headers, timeout=self._timeout, transport=transport
        )

    async def aclose(self) -> None:
        await self._http.aclose()

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def _send(self, method: str, path: str, *, json: Any = None, params: Mapping[str, Any] | None = None) -> Any:
        attempt, waited = 0, 0.0
        while True:
            attempt += 1
            try:
                response = await self._http.request(method, path, json=json, params=params)
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
            await anyio.sleep(delay)
            waited += delay

    async def retrieve(
        self,
        query: str,
        k: int | None = None,
        task_id: str | None = None,
        filters: Mapping[str, Any] | None = None,
        run_id: str | None = None,
        include_served: bool = False,
    ) -> Retrieval:
        """As Client.retrieve."""
        body = self._retrieve_body(query, k, task_id, filters, run_id, include_served)
        return Retrieval.from_dict(await self._send("POST", "retrieve", json=body))

    async def record(
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
        """See ``Client.record``."""
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
        return Recorded.from_dict(await self._send("POST", "trajectories", json=body), body["external_id"])

    async def record_batch(self, trajectories: Iterable[Mapping[str, Any]]) -> BatchResult:
        bodies = self._batch_bodies(trajectories)
        data = await self._send("POST", "trajectories/batch", json={"trajectories": bodies})
        return BatchResult.from_dict(data, [b["external_id"] for b in bodies])

    async def trajectory(self, trajectory_id: str) -> Trajectory:
        return Trajectory.from_dict(await self._send("GET", api_path("trajectories", trajectory_id)))

    async def wait(
        self,
        trajectory_id: str,
        timeout: float = 120.0,
        *,
        interval: float = 1.0,
        until: Iterable[str] = SETTLED_STATUSES,
    ) -> Trajectory:
        targets = frozenset(until)
        deadline = time.monotonic() + timeout
        while True:
            current = await self.trajectory(trajectory_id)
            if current.status in targets:
                return current
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise WaitTimeoutError(
                    f"trajectory {trajectory_id} still '{current.status}' after {timeout:g} s", trajectory=current
                )
            await anyio.sleep(min(interval, remaining))
            interval = min(interval * 1.5, 5.0)

    async def memories_page(self, limit: int = 20, offset: int = 0) -> MemoryPage:
        return MemoryPage.from_dict(await self._send("GET", "memories", params={"limit": limit, "offset": offset}))

    async def memories(self, page_size: int = PAGE_SIZE) -> AsyncIterator[MemoryItem]:
        offset = 0
        while True:
            page = await self.memories_page(page_size, offset)
            for item in page.items:
                yield item
            offset += len(page.items)
            if not page.items or offset >= page.count:
                return

    async def memory(self, memory_id: str) -> MemoryItem:
        return MemoryItem.from_dict(await self._send("GET", api_path("memories", memory_id)))

    async def impact(self, days: int | None = None) -> Impact:
        return Impact.from_dict(await self._send("GET", "impact", params={"days": days} if days else None))

    async def token(self) -> TokenInfo:
        return TokenInfo.from_dict(await self._send("GET", "token"))

    # --- review (a token with the ``review`` scope) ---------------------------------------------------
    async def review_queue(self, limit: int = 20, offset: int = 0, **filters: Any) -> ReviewPage:
        """One page of proposed items, oldest first. ``filters``: q, origin, verdict,
        agent, date_from, date_to (ISO dates), has_duplicate."""
        return ReviewPage.from_dict(
            await self._send("GET", "review/items", params=self._review_params(limit, offset, filters))
        )

    async def review_item(self, item_id: str) -> ReviewItem:
        """One item (any status) with its source trajectories and near-duplicates."""
        return ReviewItem.from_dict(await self._send("GET", api_path("review", "items", item_id)))

    async def approve_item(self, item_id: str, **options: Any) -> ReviewItem:
        """Approve (a no-op on an approved item). ``options`` go into the request body as given."""
        return ReviewItem.from_dict(
            await self._send("POST", api_path("review", "items", item_id, "approve"), json=options)
        )

    async def reject_item(self, item_id: str, reason: str, **options: Any) -> ReviewItem:
        """Reject a proposed item; ``reason`` is required."""
        return ReviewItem.from_dict(
            await self._send("POST", api_path("review", "items", item_id, "reject"), json={"reason": reason, **options})
        )

    async def edit_item(
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
        return ReviewItem.from_dict(await self._send("PATCH", api_path("review", "items", item_id), json=body))

    def run(self, task: str, **kwargs: Any) -> AsyncRun:
        """``async with aclient.run(task, task_id=…) as run:``."""
        return AsyncRun(self, task, **kwargs)
