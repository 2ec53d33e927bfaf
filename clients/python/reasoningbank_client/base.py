"""The configuration, request bodies and answers both clients share: ``_Base``
builds every request path and body, reads every answer and retries
(``_request``, an operation of operations.py); the API's methods are written
once on top of it in endpoints.py, and ``Client`` / ``AsyncClient`` only send."""

from __future__ import annotations

import dataclasses
import os
import uuid
from collections.abc import Iterable, Mapping
from typing import Any
from urllib.parse import quote

import httpx

from reasoningbank_client import __version__
from reasoningbank_client.adapters import to_messages
from reasoningbank_client.errors import ConfigurationError, ConnectionError, RBError, error_for
from reasoningbank_client.operations import Call, Op, Sleep
from reasoningbank_client.retry import RETRY_STATUSES, RetryPolicy, parse_retry_after

API_PREFIX = "/api/v1"
DEFAULT_TIMEOUT = 30.0
PAGE_SIZE = 100  # the service's largest page


def api_base_url(url: str) -> str:
    """``http://host:8000`` or ``http://host:8000/api/v1`` → ``http://host:8000/api/v1/``."""
    url = url.strip().rstrip("/")
    if not url.endswith(API_PREFIX):
        url += API_PREFIX
    return url + "/"


def api_path(*parts: Any) -> str:
    """A path relative to the API base with every part percent-encoded, so an
    id such as ``../../metrics`` stays one segment of the path it was meant
    for (``.`` and ``..`` too: URL resolution would otherwise drop them)."""
    segments = []
    for part in parts:
        segment = quote(str(part), safe="")
        segments.append(segment.replace(".", "%2E") if segment in (".", "..") else segment)
    return "/".join(segments)


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
    usage: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The JSON body of one trajectory. ``messages`` may be anything
    ``adapters.to_messages`` reads; an ``external_id`` is generated when none
    is given, so that a retried POST answers the same trajectory. ``usage``:
    the run's LLM tokens, ``{"prompt_tokens": …, "completion_tokens": …}``."""
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
        "usage": dict(usage) if usage is not None else None,
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

    def _request(
        self,
        method: str,
        path: str,
        *,
        json: Any = None,
        params: Mapping[str, Any] | None = None,
        content: bytes | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> Op[Any]:
        """One request, retried as ``self.retry`` says (retry.py): its parsed JSON, or the typed error."""
        attempt, waited = 0, 0.0
        while True:
            attempt += 1
            try:
                response = yield Call(method, path, json, params, content, headers)
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
            yield Sleep(delay)
            waited += delay

    # --- request bodies -------------------------------------------------------------------------
    @staticmethod
    def _retrieve_body(
        query: str,
        k: int | None,
        task_id: str | None,
        filters: Mapping[str, Any] | None,
        run_id: str | None = None,
        include_served: bool = False,
    ) -> dict:
        body: dict[str, Any] = {"query": query}
        if run_id:
            body["run_id"] = str(run_id)
        if include_served:
            body["include_served"] = True
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
