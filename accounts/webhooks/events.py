"""The events a webhook can subscribe to, and how a list of them is read."""

from __future__ import annotations

from collections.abc import Iterable

from accounts.errors import AccountsInvalid

# Event name → what it tells the receiver.
EVENTS: dict[str, str] = {
    "item.proposed": "A memory item awaits review (distilled, written by hand, or sent back to proposed).",
    "item.approved": "A memory item was approved: agents are served it.",
    "item.archived": "An approved memory item was archived: agents are no longer served it.",
    "item.suspended": "An approved memory item stopped being served: a new risk finding awaits a reviewer.",
    "item.risk_confirmed": "Reviewers approved a memory item knowing of its risk findings: agents are served it.",
    "trajectory.needs_attention": "A trajectory stopped in needs attention (the judge or distiller failed).",
    "impact.verdict": "The bank's Impact verdict appeared or changed.",
    "release.canary_rolled_back": "The canary release was rolled back automatically: it did significantly worse.",
    "evaluation.started": "An evaluation run was created: a runner can start its tries (rb eval run <id> -- <command>).",
    "evaluation.finished": "Every try of an evaluation run is recorded and judged: its verdict is known.",
}


def bank_webhook_data(bank) -> dict:
    """The ``bank`` every event's ``data`` carries."""
    return {"id": str(bank.public_id), "team": bank.team.slug, "slug": bank.slug, "name": bank.name}


def events_parse(raw: str | Iterable[str]) -> list[str]:
    """The event names in ``raw`` (a comma-separated string or a list), each
    once, in the order of EVENTS. Raises AccountsInvalid, naming the valid
    events, for an empty list or an unknown name."""
    names = raw.split(",") if isinstance(raw, str) else list(raw)
    given = {str(n).strip() for n in names if str(n).strip()}
    unknown = sorted(given - set(EVENTS))
    valid = ", ".join(EVENTS)
    if unknown:
        raise AccountsInvalid(
            f"Unknown event {', '.join(map(repr, unknown))}: choose from {valid}.", code="unknown_event"
        )
    if not given:
        raise AccountsInvalid(f"Choose at least one event: {valid}.", code="no_events")
    return [name for name in EVENTS if name in given]
