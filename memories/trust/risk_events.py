"""The webhook events of risk findings: ``item.suspended`` (an approved item
stopped being served because of a new finding) and ``item.risk_confirmed``
(reviewers approved an item knowing of its findings, named with who
confirmed them). Handed to ``accounts.webhooks``, delivered after commit."""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial

from django.db import transaction

from accounts.webhooks.subscriptions import webhook_events_emit
from memories.items.events import item_webhook_data
from memories.items.models import ItemStatus, MemoryItem
from memories.trust.risk_models import RiskFinding


def findings_webhook_data(findings: Sequence[RiskFinding]) -> list[dict]:
    return [{"kind": f.kind, "excerpt": f.excerpt, "detector": f.detector, "step": f.step} for f in findings]


def item_suspended_announce(*, item: MemoryItem, findings: Sequence[RiskFinding]) -> None:
    """Announce ``item.suspended`` for the approved ``item`` whose new ``findings`` stop its serving, once the
    caller's transaction commits, and only if it is still approved with some of them unconfirmed then (an
    item written approved by its author, who confirms its findings at once, was never suspended)."""
    ids = [f.pk for f in findings if not f.confirmed and f.pk is not None]
    if ids:
        transaction.on_commit(partial(_suspended_emit, item.pk, ids))


def _suspended_emit(item_pk: int, finding_ids: list[int]) -> None:
    item = MemoryItem.objects.select_related("bank__team").filter(pk=item_pk, status=ItemStatus.APPROVED).first()
    findings = list(RiskFinding.objects.filter(pk__in=finding_ids, confirmed=False).order_by("id"))
    if item is None or not findings:
        return
    data = {**item_webhook_data(item), "findings": findings_webhook_data(findings), "reason": item.needs_review_reason}
    webhook_events_emit(bank_id=item.bank_id, event="item.suspended", payloads=[data])


def item_risk_confirmed_announce(
    *, item: MemoryItem, findings: Sequence[RiskFinding], by: Sequence = (), token=None
) -> None:
    """Announce ``item.risk_confirmed``: ``item`` is approved with ``findings`` confirmed by the users ``by``
    (each reviewer whose approve vote confirmed them, the deciding one last) or ``token``."""
    names = list(dict.fromkeys(u.get_username() for u in by if u is not None))

    def payload() -> list[dict]:
        data = item_webhook_data(item)
        confirmed = {"users": names, "token": token.name if token is not None else None}
        return [{**data, "findings": findings_webhook_data(findings), "confirmed_by": confirmed}]

    webhook_events_emit(bank_id=item.bank_id, event="item.risk_confirmed", payloads=payload)
