"""The ready-to-paste requests a new token's page shows: one per scope the
token was granted (a request needing a scope it lacks would answer 403), and
one any live token may make. Every scope in ``Scope`` has its example here;
tests run each shown request against the API."""

from __future__ import annotations

import json
from dataclasses import dataclass

from accounts.models import Bank, Scope

TASK = "Find the cheapest flight from Berlin to Rome next Friday"
AGENT_SCOPES = frozenset({Scope.RETRIEVE, Scope.INGEST})


@dataclass(frozen=True)
class ApiExample:
    """One request: ``path`` is relative to the API's base (``/api/v1/``); ``body`` is JSON, or None for a GET."""

    name: str  # the id of its <pre>, "curl-<name>"
    title: str
    method: str
    path: str
    body: dict | None = None

    def curl(self, *, api_base: str, secret: str) -> str:
        lines = [f"curl -sS{'' if self.method == 'GET' else f' -X {self.method}'} '{api_base}{self.path}'"]
        lines.append(f"  -H 'Authorization: Bearer {secret}'")
        if self.body is not None:
            payload = json.dumps(self.body, indent=2).replace("'", "'\\''")
            lines += ["  -H 'Content-Type: application/json'", f"  -d '{payload}'"]
        return " \\\n".join(lines)


def scope_examples(bank: Bank) -> dict[str, ApiExample]:
    """Each scope's example request (every scope of ``Scope`` has one)."""
    return {
        Scope.RETRIEVE: ApiExample(
            "retrieve", "Retrieve memories before a task", "POST", "retrieve", {"query": TASK, "k": bank.top_k}
        ),
        Scope.INGEST: ApiExample(
            "trajectory",
            "Send the trajectory after it",
            "POST",
            "trajectories",
            {
                "task": TASK,
                "steps": [
                    {"kind": "action", "content": "search_flights(origin=BER, destination=FCO, date=friday)"},
                    {"kind": "observation", "content": "3 results, cheapest 79 EUR"},
                ],
                "final_answer": "79 EUR with the 06:10 flight",
                "outcome": "success",
                "external_id": "run-0001",
            },
        ),
        Scope.REVIEW: ApiExample("review", "List the memory items waiting for review", "GET", "review/items?limit=5"),
    }


TOKEN_INFO = ApiExample("token", "Check the token (its bank, scopes and limits)", "GET", "token")


def token_examples(*, bank: Bank, scopes: list[str]) -> list[ApiExample]:
    """The examples a token with ``scopes`` may run: one per granted scope, in
    ``Scope``'s order, then the one any token may run."""
    by_scope = scope_examples(bank)
    return [by_scope[scope] for scope in Scope.values if scope in scopes] + [TOKEN_INFO]


def is_agent_token(scopes: list[str]) -> bool:
    """Whether an agent can use the token: it may retrieve or send trajectories."""
    return bool(AGENT_SCOPES & set(scopes))
