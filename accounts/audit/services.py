"""The audit log: every change a human (or token) makes is recorded with
``audit_record``, which other apps' services call too."""

from __future__ import annotations

from typing import Any

from accounts.audit.actions import AuditAction
from accounts.models import ApiToken, AuditEvent, Bank, Team


def _object_identity(obj) -> tuple[str, str, str]:
    if obj is None:
        return "", "", ""
    object_type = obj._meta.model_name
    object_id = str(getattr(obj, "public_id", None) or obj.pk)
    return object_type, object_id, str(obj)[:200]


def audit_record(*, action: str, **fields) -> AuditEvent:
    """Append one audit event (``fields``: audit_event's ``team``, ``bank``, ``user``, ``token``, ``obj``,
    ``before``, ``after``, ``object_repr``). ``action`` is a dotted verb such as
    ``memory_item.approve``; ``team`` may be left out when ``bank`` is given.
    ``obj`` is any model instance (its ``public_id``, else pk, is recorded).
    ``before``/``after`` are JSON-serializable snapshots (datetimes, UUIDs and
    decimals are fine). ``object_repr`` replaces ``str(obj)`` where that
    would copy content the log must not keep (a deleted trajectory's task).
    Anonymous users are recorded as no actor. Raises
    ValueError (a programming error, not a refusal) if neither team nor bank
    is given, or the action is not in the registry. Joins the caller's transaction, so an event exists only if the
    change it describes does."""
    event = audit_event(action=action, **fields)
    event.save(force_insert=True)
    return event


def audit_event(
    *,
    action: str,
    team: Team | None = None,
    bank: Bank | None = None,
    user=None,
    token: ApiToken | None = None,
    obj=None,
    before: dict | None = None,
    after: dict | None = None,
    object_repr: str | None = None,
) -> AuditEvent:
    """The unsaved event ``audit_record`` appends (same arguments and rules)."""
    if action not in AuditAction.values:
        raise ValueError(f"{action!r} is not an audit action: add it to AuditAction (accounts/audit/actions.py)")
    if team is None:
        if bank is None:
            raise ValueError("audit_record needs a team or a bank")
        team = bank.team
    if user is not None and not getattr(user, "is_authenticated", False):
        user = None
    object_type, object_id, default_repr = _object_identity(obj)
    object_repr = default_repr if object_repr is None else object_repr[:200]
    return AuditEvent(
        team=team,
        bank=bank,
        actor_user=user,
        actor_token=token,
        action=action,
        object_type=object_type,
        object_id=object_id,
        object_repr=object_repr,
        before=before,
        after=after,
    )


def snapshot(obj, fields: list[str]) -> dict[str, Any]:
    """The named fields of ``obj`` as a dict for ``audit_record``."""
    return {name: getattr(obj, name) for name in fields}
