"""``Client`` (blocking) and ``AsyncClient``: one method per endpoint of the
agent API, with safe retries and typed errors. Both share ``_Base``, which
builds every request body and reads every answer; the two classes only send."""

from __future__ import annotations

import dataclasses
import os
import time
import uuid
from collections.abc import AsyncIterator, Iterable, Iterator, Mapping
from typing import Any

import anyio
import httpx

from reasoningbank_client import __version__
from reasoningbank_client.adapters import to_messages
from reasoningbank_client.errors import ConfigurationError, ConnectionError, RBError, WaitTimeoutError, error_for
from reasoningbank_client.retry import RETRY_STATUSES, RetryPolicy, parse_retry_after
from reasoningbank_client.run import AsyncRun, Run
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

API_PREFIX = "/api/v1"
DEFAULT_TIMEOUT = 30.0
PAGE_SIZE = 100  # the service's largest page


def api_base_url(url: str) -> str:
    """``http://host:8000`` or ``http://host:8000/api/v1`` → ``http://host:8000/api/v1/``."""
    url = url.strip().rstrip("/")
    if not url.endswith(API_PREFIX):
        url += API_PREFIX
    return url + "/"


def trajectory_body(
    task: str,
    *,
    steps: list[Any] | None = None,
    messages: Any = None,
    system: Any = None,
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
) -> dict[str, Any]:
    """The JSON body of one trajectory. ``messages`` may be anything
    ``adapters.to_messages`` reads; an ``external_id`` is generated when none
    is given, so that a retried POST answers the same trajectory."""
    if messages is not None:
        messages, guessed_answer = to_messages(messages)
        if final_answer is None:
            final_answer = guessed_answer
    if steps is not None:
        steps = [dataclasses.asdict(s) if dataclasses.is_dataclass(s) else s for s in steps]
    body = {
        "task": task,
        "steps": steps,
        "messages": messages,
        "system": system,
        "final_answer": final_answer,
        "outcome": outcome,
        "reward": reward,
        "retrieval_id": str(retrieval_id) if retrieval_id else None,
        "task_id": task_id,
        "group_id": group_id,
        "group_size": group_size,
        "agent": agent,
        "metadata": dict(metadata) if metadata is not None else None,
        "external_id": external_id or str(uuid.uuid4()),
    }
    return {key: value for key, value in body.items() if value is not None}


class _Base:
    def __init__(
        self,
        url: str | None = None,
        token: str | None = None,
        *,
        timeout: float = DEFAULT_TIMEOUT,
        retry: RetryPolicy | None = None,
        agent: str | None = None,
        headers: Mapping[str, str] | None = None,
    ):
        url = url or os.environ.get("RB_URL", "")
        token = token or os.environ.get("RB_TOKEN", "")
        if not url:
            raise ConfigurationError("No service URL: pass url=… or set RB_URL (e.g. http://127.0.0.1:8000).")
        if not token:
            raise ConfigurationError("No API token: pass token=… or set RB_TOKEN (rb_…).")
        self.base_url = api_base_url(url)
        self.retry = retry or RetryPolicy()
        self.agent = agent
        self._timeout = timeout
        self._headers = {
            "Authorization": f"Bearer {token}",
            "Accept": "application/json",
            "User-Agent": f"reasoningbank-client/{__version__}",
            **(headers or {}),
        }

    # --- answers --------------------------------------------------------------------------------
    @staticmethod
    def _read(response: httpx.Response) -> tuple[Any, RBError | None, float | None]:
        """(parsed JSON, error or None, Retry-After seconds)."""
        try:
            body = response.json()
        except ValueError:
            body = response.text
        if response.status_code < 400:
            return body, None, None
        retry_after = parse_retry_after(response.headers.get("Retry-After"))
        return body, error_for(response.status_code, body, retry_after=retry_after), retry_after

    def _connection_error(self, exc: Exception) -> ConnectionError:
        return ConnectionError(f"Could not reach {self.base_url}: {exc!r}", code="connection_error")

    # --- request bodies -------------------------------------------------------------------------
    @staticmethod
    def _retrieve_body(query: str, k: int | None, task_id: str | None, filters: Mapping[str, Any] | None) -> dict:
        body: dict[str, Any] = {"query": query}
        if k is not None:
            body["k"] = k
        if task_id:
            body["task_id"] = task_id
        if filters is not None:
            body["filters"] = dict(filters)
        return body

    @staticmethod
    def _review_params(limit: int, offset: int, filters: dict[str, Any]) -> dict[str, Any]:
        return {"limit": limit, "offset": offset, **{k: v for k, v in filters.items() if v not in (None, "", False)}}

    @staticmethod
    def _edit_body(fields: dict[str, Any]) -> dict[str, Any]:
        return {k: list(v) if k == "tags" else v for k, v in fields.items() if v is not None}

    def _record_body(self, task: str, kwargs: dict[str, Any]) -> dict[str, Any]:
        if kwargs.get("agent") is None and self.agent:
            kwargs["agent"] = self.agent
        return trajectory_body(task, **kwargs)

    def _batch_bodies(self, trajectories: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
        bodies = []
        for item in trajectories:
            item = dict(item)
            bodies.append(self._record_body(item.pop("task", ""), item))
        return bodies


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
    ) -> Retrieval:
        """Approved memories most relevant to ``query`` and a ``system_block`` for the system prompt."""
        return Retrieval.from_dict(self._send("POST", "retrieve", json=self._retrieve_body(query, k, task_id, filters)))

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
        return Trajectory.from_dict(self._send("GET", f"trajectories/{trajectory_id}"))

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
        return MemoryItem.from_dict(self._send("GET", f"memories/{memory_id}"))

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
        return ReviewItem.from_dict(self._send("GET", f"review/items/{item_id}"))

    def approve_item(self, item_id: str, **options: Any) -> ReviewItem:
        """Approve (a no-op on an approved item). ``options`` go into the request body as given."""
        return ReviewItem.from_dict(self._send("POST", f"review/items/{item_id}/approve", json=options))

    def reject_item(self, item_id: str, reason: str, **options: Any) -> ReviewItem:
        """Reject a proposed item; ``reason`` is required."""
        return ReviewItem.from_dict(
            self._send("POST", f"review/items/{item_id}/reject", json={"reason": reason, **options})
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
        return ReviewItem.from_dict(self._send("PATCH", f"review/items/{item_id}", json=body))

    def run(self, task: str, **kwargs: Any) -> Run:
        """``with client.run(task, task_id=…) as run:`` — retrieves on entry, records on exit."""
        return Run(self, task, **kwargs)


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
    ) -> Retrieval:
        body = self._retrieve_body(query, k, task_id, filters)
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
        return Trajectory.from_dict(await self._send("GET", f"trajectories/{trajectory_id}"))

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
        return MemoryItem.from_dict(await self._send("GET", f"memories/{memory_id}"))

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
        return ReviewItem.from_dict(await self._send("GET", f"review/items/{item_id}"))

    async def approve_item(self, item_id: str, **options: Any) -> ReviewItem:
        """Approve (a no-op on an approved item). ``options`` go into the request body as given."""
        return ReviewItem.from_dict(await self._send("POST", f"review/items/{item_id}/approve", json=options))

    async def reject_item(self, item_id: str, reason: str, **options: Any) -> ReviewItem:
        """Reject a proposed item; ``reason`` is required."""
        return ReviewItem.from_dict(
            await self._send("POST", f"review/items/{item_id}/reject", json={"reason": reason, **options})
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
        return ReviewItem.from_dict(await self._send("PATCH", f"review/items/{item_id}", json=body))

    def run(self, task: str, **kwargs: Any) -> AsyncRun:
        """``async with aclient.run(task, task_id=…) as run:``."""
        return AsyncRun(self, task, **kwargs)
