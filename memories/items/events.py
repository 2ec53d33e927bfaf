"""The webhook events of memory items (item.proposed, item.approved,
item.archived): what a receiver is told about an item, handed to
``accounts.webhooks`` after the item's row and version are written."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable

from accounts.webhooks.events import bank_webhook_data
from accounts.webhooks.subscriptions import webhook_events_emit
from memories.items.models import ItemStatus, MemoryItem

# The status an item reaches → the event announcing it (a rejected or superseded item is announced by none).
STATUS_EVENTS = {
    ItemStatus.PROPOSED: "item.proposed",
    ItemStatus.APPROVED: "item.approved",
    ItemStatus.ARCHIVED: "item.archived",
}


def item_webhook_data(item: MemoryItem) -> dict:
    bank = item.bank
    return {
        "bank": bank_webhook_data(bank),
        "item": {
            "id": str(item.public_id),
            "title": item.title,
            "description": item.description,
            "content": item.content,
            "status": item.status,
            "origin": item.origin,
            "tags": list(item.tags),
        },
    }


def items_status_announce(*, items: Iterable[MemoryItem]) -> None:
    """Emit each item's event for the status it is in now (see STATUS_EVENTS),
    one emit per bank and event; delivered after the caller's transaction commits."""
    groups: dict[tuple[int, str], list[MemoryItem]] = defaultdict(list)
    for item in items:
        event = STATUS_EVENTS.get(item.status)
        if event is not None:
            groups[(item.bank_id, event)].append(item)
    for (bank_id, event), members in groups.items():
        webhook_events_emit(
            bank_id=bank_id, event=event, payloads=lambda members=members: [item_webhook_data(i) for i in members]
        )
