"""Lessons that expire or go stale: an item's validity (set by a reviewer, or
the bank's default from approval), and the environment values that, once
recent trajectories report another, make the items learnt under the old one
stale for review. Nothing is removed: an expired item is only not served, a
stale one is only listed."""

from __future__ import annotations

from datetime import date, datetime, time, timedelta

from django.db import transaction
from django.db.models import Q
from django.db.models.fields.json import KeyTextTransform
from django.utils import dateformat, timezone

from accounts.models import ApiToken, Bank
from memories.items.models import REASON_MAX, ItemStatus, MemoryItem
from memories.items.transitions import EDITABLE_STATUSES
from memories.items.versions import VersionChange, item_lock, item_version_record, items_version_record
from memories.learning.models import AGENT_VERSION_KEY, BankLearning
from memories.learning.selectors import bank_learning, environment_value
from memories.review.collaboration import item_version_check
from reasoningbank_site.errors import Conflict, Invalid


def approval_lifecycle(item: MemoryItem) -> list[str]:
    """On approval (a move to approved): an item without a future validity
    gets the bank's default (``valid_days`` after now; none when the bank
    sets none), and an item approved again starts afresh (not archived as
    wrong, stale, proposed for retirement or suspended). Returns the fields
    set, for an item_status_move ``prepare``."""
    now = timezone.now()
    fields = ["archived_as_wrong", "stale_reason", "stale_environment", "retirement_reason", "suspended"]
    item.archived_as_wrong, item.stale_reason, item.stale_environment = False, "", {}
    item.retirement_reason, item.suspended = "", False
    if item.valid_until is None or item.valid_until <= now:
        days = bank_learning(bank=item.bank).valid_days
        item.valid_until = now + timedelta(days=days) if days else None
        fields.append("valid_until")
    return fields


def validity_day_end(day: date) -> datetime:
    """The end of ``day`` in the reviewer's (the current) time zone: a validity picked as a day lasts through it."""
    return timezone.make_aware(datetime.combine(day, time.max))


def validity_label(moment: datetime) -> str:
    """``moment`` as a reviewer reads it, in the current time zone: the day ("1 Jan 2020") when it is the end
    of a day (what a date picked on the item page sets), else the day and time ("1 Jan 2020 14:30 UTC")."""
    local = timezone.localtime(moment)
    return dateformat.format(local, "j M Y" if local.time() == time.max else "j M Y H:i T")


@transaction.atomic
def memory_item_validity_set(
    *,
    item: MemoryItem,
    author,
    valid_until: datetime | None,
    seen_version: int | None = None,
    token: ApiToken | None = None,
) -> MemoryItem:
    """Set (or with None, remove) the moment after which ``item`` is not
    served; an expired item given a future validity is served again. Writes
    a "validity" version. Raises Invalid for a moment not in the future or
    without a time zone, Conflict for an item that can no longer change,
    StaleVersion when ``seen_version`` is given and the item changed since."""
    if valid_until is not None:
        if timezone.is_naive(valid_until):
            raise Invalid("valid_until needs a time zone (e.g. 2027-01-31T00:00:00Z).")
        if valid_until <= timezone.now():
            raise Invalid(
                f"Valid until {validity_label(valid_until)} is in the past: give a later day, "
                "or none for no expiry (archive the item to stop serving it now)."
            )
    item_version_check(item=item, seen_version=seen_version)
    item_lock(item)
    if item.status not in EDITABLE_STATUSES:
        raise Conflict(f"A {item.status} item cannot change.")
    if item.valid_until == valid_until:
        return item
    item.valid_until = valid_until
    item.save(update_fields=["valid_until", "updated_at"])
    note = f"valid until {validity_label(valid_until)}" if valid_until else "no expiry"
    item_version_record(item=item, action="validity", author=author, note=note, token=token)
    return item


@transaction.atomic
def memory_item_stale_clear(
    *, item: MemoryItem, author, seen_version: int | None = None, token: ApiToken | None = None
) -> MemoryItem:
    """A reviewer confirms a stale item still holds: it adopts the newer
    environment values it was marked for, and is no longer stale. No-op for
    an item that is not stale. StaleVersion as memory_item_validity_set."""
    item_version_check(item=item, seen_version=seen_version)
    item_lock(item)
    if not item.stale_reason:
        return item
    item.environment = {**item.environment, **item.stale_environment}
    item.stale_environment, item.stale_reason = {}, ""
    item.save(update_fields=["environment", "stale_environment", "stale_reason", "updated_at"])
    item_version_record(item=item, action="confirmed-current", author=author, note="still holds", token=token)
    return item


def items_environment_observe(
    *, bank: Bank, agent: str, metadata: dict, observed_at: datetime, learning: BankLearning | None = None
) -> int:
    """A trajectory of ``bank`` (by ``agent``, with ``metadata``, recorded at
    ``observed_at``) reports its environment: the approved items learnt
    before it under another value of the agent's version or of a key the
    bank chose (and, when both name an agent, by the same agent) are marked
    stale, once, with a "stale" version. Returns how many. The caller holds
    a transaction. ``learning``: the bank's policy when the caller read it already."""
    if not isinstance(metadata, dict) or not metadata:
        return 0
    keys = [AGENT_VERSION_KEY, *(learning or bank_learning(bank=bank)).environment_keys]
    seen = {
        k: environment_value(metadata[k]) for k in keys if isinstance(metadata, dict) and metadata.get(k) is not None
    }
    if not seen:
        return 0
    marked: dict[int, MemoryItem] = {}
    for key, value in seen.items():
        qs = (
            MemoryItem.objects.select_for_update()
            .filter(bank=bank, status=ItemStatus.APPROVED, created_at__lt=observed_at, environment__has_key=key)
            .filter(stale_reason="")
            .annotate(old_value=KeyTextTransform(key, "environment"))
            .exclude(old_value=value)
            .defer("embedding")
            .order_by("pk")
        )
        if agent:
            qs = qs.filter(Q(environment__agent=agent) | ~Q(environment__has_key="agent"))
        for item in qs:
            item = marked.setdefault(item.pk, item)
            item.stale_environment = {**item.stale_environment, key: value}
    for item in marked.values():
        changes = ", ".join(
            f"{k} is now {v!r} (learnt under {item.environment.get(k)!r})" for k, v in item.stale_environment.items()
        )
        item.stale_reason = changes[:REASON_MAX]
        item.updated_at = timezone.now()
    if marked:
        MemoryItem.objects.bulk_update(list(marked.values()), ["stale_environment", "stale_reason", "updated_at"])
        items_version_record(
            changes=[VersionChange(item=item, action="stale", note=item.stale_reason) for item in marked.values()]
        )
    return len(marked)
