"""A drop-in for the ``reasoning-bank`` library (PyPI, ``from reasoning_bank
import ReasoningBank, Turn``), backed by this service. Change the import::

    from reasoningbank_client.compat import ReasoningBank, Turn

    bank = ReasoningBank(url="http://127.0.0.1:8000", token="rb_…")   # or RB_URL / RB_TOKEN
    memories = await bank.retrieve(task)
    system_block = bank.format_as_system_block(memories) if memories else None
    await bank.ingest_trajectory([Turn("user", task), Turn("assistant", answer)], task=task)

Same names and signatures as reasoning-bank 0.1.1 for retrieving, ingesting,
formatting the system block, listing and MaTTS. What differs, and why: the
service judges and distills on its own workers and a human approves every
item before agents see it, so ``ingest_trajectory`` returns ``[]`` (the
lessons it will produce are not approved yet); the LLM, store and embedder
are the service's (the arguments are accepted and ignored); ``scope`` is the
token's bank. ``add_manual``, ``delete`` and ``import_`` need a reviewer and
raise ``NotImplementedError`` naming the way to do it. The client README has
the full table."""

from __future__ import annotations

import asyncio
import json
import os
import uuid
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Literal

from reasoningbank_client.async_client import AsyncClient
from reasoningbank_client.errors import ConfigurationError
from reasoningbank_client.types import MemoryItem as ServiceMemoryItem

Role = Literal["system", "user", "assistant", "tool"]
_ROLES = frozenset(("system", "user", "assistant", "tool"))


@dataclass
class Turn:
    """reasoning-bank's neutral message: a role, its text, and a ``meta`` bag
    (``tool_calls``: ``[{name, arguments, id?}]``, ``tool_results``: ``[{content, is_error?, id?}]``)."""

    role: Role
    content: str
    meta: dict[str, Any] = field(default_factory=dict)


Trajectory = list[Turn]


@dataclass
class MemoryItem:
    """reasoning-bank's MemoryItem fields, filled from an approved service item."""

    id: str
    title: str
    description: str
    content: str
    source: str = "manual"
    task_signature: str = ""
    scope: str = "global"
    embedding: list[float] | None = None
    created_at: datetime = field(default_factory=lambda: datetime.now(timezone.utc))  # noqa: UP017 - Python 3.10
    last_used_at: datetime | None = None
    use_count: int = 0
    confidence: float = 1.0
    related_ids: list[str] = field(default_factory=list)
    score: float | None = None  # this service's similarity, when retrieved
    retrieval_id: str | None = None  # the retrieval that served it

    def signature_text(self) -> str:
        return f"{self.title}\n{self.description}\n{self.content}"

    @classmethod
    def from_service(cls, item: ServiceMemoryItem, *, scope: str, retrieval_id: str | None = None) -> MemoryItem:
        return cls(
            id=item.id,
            title=item.title,
            description=item.description,
            content=item.content,
            source=item.origin or "manual",
            scope=scope,
            created_at=item.approved_at or datetime.now(timezone.utc),  # noqa: UP017
            score=item.score,
            retrieval_id=retrieval_id,
        )

    def model_dump_json(self) -> str:
        data = {k: v.isoformat() if isinstance(v, datetime) else v for k, v in self.__dict__.items()}
        return json.dumps(data, ensure_ascii=False)


def _get(obj: Any, key: str, default: Any = None) -> Any:
    return obj.get(key, default) if isinstance(obj, dict) else getattr(obj, key, default)


def _coerce_turn(message: Any) -> Turn:
    """reasoning-bank's rules: a Turn, a dict with role/content (other keys → meta), or an object with .role/.content."""
    if isinstance(message, Turn):
        return message
    if isinstance(message, dict):
        if "role" not in message:
            raise ValueError(f"turn dict missing 'role' key: {message!r}")
        meta = {k: v for k, v in message.items() if k not in ("role", "content")}
        role, content = message["role"], message.get("content") or ""
    else:
        role = getattr(message, "role", None)
        if role is None:
            raise ValueError(f"cannot coerce {type(message).__name__} to Turn — missing .role")
        content = getattr(message, "content", "") or ""
        meta = {
            n: getattr(message, n) for n in ("tool_calls", "tool_results", "name", "id") if getattr(message, n, None)
        }
    role = str(role).strip().lower()
    if role not in _ROLES:
        raise ValueError(f"turn role must be one of {sorted(_ROLES)}, got {role!r}")
    return Turn(role, content if isinstance(content, str) else json.dumps(content, default=str), meta)


def turns_to_messages(trajectory: Any) -> list[dict[str, Any]]:
    """reasoning-bank turns → OpenAI chat-completions messages (tool calls and results kept)."""
    messages: list[dict[str, Any]] = []
    for turn in (_coerce_turn(m) for m in (trajectory or [])):
        calls = turn.meta.get("tool_calls") or []
        results = turn.meta.get("tool_results") or []
        if turn.role == "tool" and not results:
            results = [{"content": turn.content, "id": turn.meta.get("tool_call_id") or turn.meta.get("id")}]
        elif turn.role != "tool" and (turn.content or calls):
            message: dict[str, Any] = {"role": turn.role, "content": turn.content}
            if calls:
                message["content"] = turn.content or None
                message["tool_calls"] = [_chat_call(call, f"call_{len(messages)}_{i}") for i, call in enumerate(calls)]
            messages.append(message)
        for result in results:
            text = _get(result, "content", "")
            text = text if isinstance(text, str) else json.dumps(text, default=str)
            if _get(result, "is_error", False):
                text = f"Error: {text}"
            entry = {"role": "tool", "content": text}
            result_id = _get(result, "id") or _get(result, "tool_call_id") or _get(result, "tool_use_id")
            if result_id:
                entry["tool_call_id"] = str(result_id)
            messages.append(entry)
    return messages


def _chat_call(call: Any, fallback_id: str) -> dict[str, Any]:
    arguments = _get(call, "arguments", _get(call, "input", {}))
    return {
        "id": str(_get(call, "id") or fallback_id),
        "type": "function",
        "function": {
            "name": str(_get(call, "name") or "tool"),
            "arguments": arguments if isinstance(arguments, str) else json.dumps(arguments, default=str),
        },
    }


class ReasoningBank:
    """reasoning-bank's ``ReasoningBank``, backed by the service. ``llm``, ``store``,
    ``embedder``, ``merge_thresholds`` are accepted for compatibility and unused
    (the service judges, distills, embeds and merges)."""

    def __init__(
        self,
        llm: Any = None,
        store: Any = None,
        embedder: Any = None,
        scope: str = "global",
        merge_thresholds: tuple[float, float] = (0.75, 0.92),
        async_writeback: bool = False,
        *,
        url: str | None = None,
        token: str | None = None,
        client: AsyncClient | None = None,
        agent: str | None = None,
    ) -> None:
        self.llm = llm
        self.store = store
        self.embedder = embedder
        self.scope = scope
        self.merge_thresholds = merge_thresholds
        self.async_writeback = async_writeback
        self._url, self._token, self._agent, self._client = url, token, agent, client
        if client is None and not ((url or os.environ.get("RB_URL")) and (token or os.environ.get("RB_TOKEN"))):
            raise ConfigurationError("Pass url=… and token=… (or set RB_URL and RB_TOKEN) to use the service.")
        # task → retrieval_id of its last retrieval, so ingesting it links the outcome (lift).
        self._retrievals: dict[str, str] = {}
        self._blocks: dict[str, tuple[list[str], str]] = {}

    def _new_client(self) -> AsyncClient:
        # A client per call: reasoning-bank's schedule_writeback runs calls under separate event loops.
        return self._client or AsyncClient(self._url, self._token, agent=self._agent or "reasoning-bank-compat")

    async def _with_client(self, action):
        client = self._new_client()
        try:
            return await action(client)
        finally:
            if client is not self._client:
                await client.aclose()

    # --- retrieval -------------------------------------------------------------------------------
    async def retrieve(
        self, task: str, k: int = 5, *, scope: str | None = None, min_confidence: float = 0.3
    ) -> list[MemoryItem]:
        """Up to ``k`` approved memories for ``task``. ``scope`` is the token's bank; service
        items have confidence 1.0, so ``min_confidence`` (≤ 1) keeps them all."""
        if k <= 0:
            return []
        result = await self._with_client(lambda c: c.retrieve(task, k=k))
        self._retrievals[task] = result.retrieval_id
        self._blocks[result.retrieval_id] = ([i.id for i in result.items], result.system_block)
        items = [
            MemoryItem.from_service(i, scope=scope or self.scope, retrieval_id=result.retrieval_id)
            for i in result.items
        ]
        return [i for i in items if i.confidence >= min_confidence]

    # --- ingestion -------------------------------------------------------------------------------
    async def ingest_trajectory(
        self, trajectory: Any, task: str, outcome: Literal["success", "failure"] | None = None
    ) -> list[MemoryItem]:
        """Send the run to the service (linked to this task's last retrieval). Judging and
        distillation happen there, and items need a reviewer's approval: returns ``[]``."""
        messages = turns_to_messages(trajectory)
        if not messages:
            return []
        final = next((m["content"] for m in reversed(messages) if m["role"] == "assistant" and m["content"]), None)
        await self._with_client(
            lambda c: c.record(
                task,
                messages=messages,
                final_answer=final,
                outcome=outcome,
                retrieval_id=self._retrievals.pop(task, None),
                metadata={"scope": self.scope} if self.scope != "global" else None,
            )
        )
        return []

    def schedule_writeback(
        self, trajectory: Any, task: str, outcome: Literal["success", "failure"] | None = None
    ) -> asyncio.Task[list[MemoryItem]] | list[MemoryItem]:
        """As in reasoning-bank: a background task when ``async_writeback`` and a loop runs, else synchronous."""
        coro = self.ingest_trajectory(trajectory, task, outcome=outcome)
        if self.async_writeback:
            try:
                loop = asyncio.get_running_loop()
            except RuntimeError:
                loop = None
            if loop is not None:
                return loop.create_task(coro)
        return asyncio.run(coro)

    # --- listing / export ------------------------------------------------------------------------
    async def list(self, scope: str | None = None) -> list[MemoryItem]:
        """Every approved memory of the token's bank."""

        async def collect(c: AsyncClient) -> list[MemoryItem]:
            return [MemoryItem.from_service(i, scope=scope or self.scope) async for i in c.memories()]

        return await self._with_client(collect)

    async def export(self, path: str | Path) -> None:
        """Approved memories as JSON Lines (reasoning-bank's export format, without embeddings)."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        items = await self.list()
        with path.open("w", encoding="utf-8") as f:
            for item in items:
                f.write(item.model_dump_json() + "\n")

    async def add_manual(self, title: str, description: str, content: str, *, scope: str | None = None) -> MemoryItem:
        raise NotImplementedError(
            "Items are written by reviewers: use the bank's web UI (New item) or its JSON Lines import."
        )

    async def delete(self, id: str) -> None:
        raise NotImplementedError("Items are retired by reviewers in the bank's web UI (Archive).")

    async def import_(self, path: str | Path) -> int:
        raise NotImplementedError("Import JSON Lines in the bank's web UI (reviewers): imported items await review.")

    # --- formatting ------------------------------------------------------------------------------
    def format_as_system_block(self, memories: list[MemoryItem]) -> str:
        """The service's system block when ``memories`` is exactly what one retrieval served
        (same items, same order), else reasoning-bank's own rendering."""
        if not memories:
            return ""
        retrieval_id = memories[0].retrieval_id
        served = self._blocks.get(retrieval_id or "")
        if served and served[0] == [m.id for m in memories] and served[1]:
            return served[1]
        lines = ["# Reasoning bank — lessons from prior trajectories", ""]
        for i, mem in enumerate(memories, start=1):
            lines.append(f"## {i}. {mem.title}")
            if mem.description:
                lines.append(f"_{mem.description}_")
            lines.append(mem.content)
            lines.append("")
        return "\n".join(lines).rstrip() + "\n"


async def matts_run(
    rollout_fn: Any, task: str, bank: ReasoningBank, k: int = 4, *, contrast_llm: Any = None
) -> tuple[list[Trajectory], list[MemoryItem]]:
    """reasoning-bank's MaTTS: ``k`` rollouts in parallel, recorded as one MaTTS group
    (``group_id``, ``group_size=k``) that the service contrasts once all have arrived.
    Returns ``(trajectories, [])``: contrast items need a reviewer's approval first."""
    if k < 1:
        raise ValueError(f"matts_run: k must be >= 1, got {k}")
    results = await asyncio.gather(*(rollout_fn() for _ in range(k)))
    trajectories = [[_coerce_turn(m) for m in r or []] for r in results]
    group_id = f"matts-{uuid.uuid4()}"
    retrieval_id = bank._retrievals.pop(task, None)

    async def send(c: AsyncClient) -> None:
        await c.record_batch(
            [
                {
                    "task": task,
                    "messages": turns_to_messages(t),
                    "group_id": group_id,
                    "group_size": k,
                    "retrieval_id": retrieval_id,
                }
                for t in trajectories
                if t
            ]
        )

    await bank._with_client(send)
    return trajectories, []


__all__ = ["MemoryItem", "ReasoningBank", "Trajectory", "Turn", "matts_run", "turns_to_messages"]
