"""The item page's list of what the item would make an agent do (its recorded
actions), each marked when it is new to the bank (an ``unapproved_action``
finding names it)."""

from __future__ import annotations

from django import template

from memories.items.models import ItemStatus, MemoryItem
from memories.trust.actions.models import ItemAction
from memories.trust.actions.shapes import KIND_VERBS, ActionKind
from memories.trust.risk_models import RiskFinding
from memories.trust.rules.findings import Kind

register = template.Library()

SHOWN_MAX = 80


@register.simple_tag
def item_actions_shown(item: MemoryItem) -> list[dict]:
    """The item's actions in the order they were read: the verb ("open", "run", "pay"…), the text shown
    (a package by its name and registry, the rest by their excerpt, cut to SHOWN_MAX characters), whether
    it is code, its risky parts, and whether it is new to the bank (``novel``; ``confirmed`` when a
    reviewer approved it knowing)."""
    findings = dict(
        RiskFinding.objects.filter(item=item, kind=Kind.UNAPPROVED_ACTION).values_list("excerpt", "confirmed")
    )
    rows = list(ItemAction.objects.filter(item=item).order_by("id"))
    # A command and the package it installs share one excerpt: the one that is known elsewhere is not marked.
    elsewhere = set(
        ItemAction.objects.filter(
            bank_id=item.bank_id, item__status=ItemStatus.APPROVED, value__in={a.value for a in rows}
        )
        .exclude(item=item)
        .values_list("kind", "value")
    )
    out = []
    for a in rows:
        if a.kind == ActionKind.PACKAGE:
            registry, _, name = a.value.partition(":")
            shown = f"{name} ({registry})"
        else:
            shown = a.excerpt if len(a.excerpt) <= SHOWN_MAX else a.excerpt[: SHOWN_MAX - 1] + "…"
        novel = a.excerpt in findings and (a.kind, a.value) not in elsewhere
        out.append(
            {
                "kind": a.kind,
                "verb": KIND_VERBS.get(a.kind, a.kind),
                "shown": shown,
                "code": a.kind in (ActionKind.COMMAND, ActionKind.PERMISSION),
                "risks": [r for r in a.risks.split(",") if r],
                "novel": novel,
                "confirmed": novel and findings[a.excerpt],
            }
        )
    return out
