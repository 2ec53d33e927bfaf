"""The impact.verdict webhook event: the all-time Impact verdict of each
bank with a subscription to it, sent when it differs from what the
subscription was last told (run by a beat task)."""

from __future__ import annotations

from accounts.models import Bank, WebhookSubscription
from accounts.webhooks.events import bank_webhook_data
from accounts.webhooks.subscriptions import webhook_verdict_announce
from trajectories.impact.report import ImpactReport, bank_impact
from trajectories.impact.verdicts import Verdict

# Not verdicts: the first of these a subscription sees is remembered, not sent.
NO_VERDICT = frozenset({Verdict.NO_HOLDOUT, Verdict.NOT_ENOUGH_DATA})


def _arm(stats) -> dict:
    return {"judged_retrievals": stats.units, "success_rate": round(stats.rate, 4) if stats.units else None}


def verdict_webhook_data(bank: Bank, report: ImpactReport) -> dict:
    d = report.difference
    return {
        "bank": bank_webhook_data(bank),
        "impact": {
            "verdict": report.verdict,
            "text": report.verdict_text,
            "treatment": _arm(report.treatment),
            "holdout": _arm(report.holdout),
            "difference": None
            if d is None
            else {"estimate": round(d.estimate, 4), "cs_low": round(d.cs_low, 4), "cs_high": round(d.cs_high, 4)},
        },
    }


def impact_verdicts_announce() -> int:
    """For each active bank with an enabled impact.verdict subscription, its
    all-time verdict, announced to the subscriptions told another one.
    Returns how many deliveries were made."""
    bank_ids = (
        WebhookSubscription.objects.filter(disabled_at__isnull=True, events__contains=["impact.verdict"])
        .values_list("bank_id", flat=True)
        .distinct()
    )
    made = 0
    for bank in Bank.objects.filter(pk__in=bank_ids, archived_at__isnull=True).select_related("team"):
        report = bank_impact(bank=bank)
        made += webhook_verdict_announce(
            bank_id=bank.pk,
            verdict=str(report.verdict),
            data=verdict_webhook_data(bank, report),
            first=report.verdict not in NO_VERDICT,
        )
    return made
