"""The actions finding: an action an item recommends that no item the bank
currently approves recommends, that the source task did not ask for, and
that came from the run's external content (a tool result or observation:
what an attacker can write) is a finding of kind ``unapproved_action``
(detector ACTIONS_DETECTOR, excerpt: the action's text). When the run cannot
be read (written by a person, imported, steps purged) its origin is unknown,
and novelty alone is a finding. An action new to the bank in the distiller's
own words is no finding: it is listed as new on the item page, and keeps
auto-approval away (item_has_new_action). Its actions are recorded
(ItemAction) on every scan, so approving the item makes them known to the
bank."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from django.db.models import Q

from accounts.models import Bank
from memories.items.models import ItemStatus, MemoryItem
from memories.trust.actions.extract import flaggable, item_actions, task_asks
from memories.trust.actions.models import ItemAction
from memories.trust.actions.shapes import Action
from memories.trust.risk_models import FindingSource, RiskFinding
from memories.trust.rules.findings import Kind
from memories.trust.rules.graft import OBSERVATION_KINDS

ACTIONS_DETECTOR = "actions-1"


def bank_approved_actions(*, bank: Bank, keys: Iterable[tuple[str, str]]) -> set[tuple[str, str]]:
    """Which of ``keys`` ((kind, value) pairs) an item ``bank`` currently approves recommends. Only approved
    items count: an archived, rejected or superseded item's actions are no longer vouched for."""
    keys = set(keys)
    if not keys:
        return set()
    rows = ItemAction.objects.filter(
        bank=bank, item__status=ItemStatus.APPROVED, value__in={value for _, value in keys}
    ).values_list("kind", "value")
    return {row for row in rows if row in keys}


def _of(item: MemoryItem) -> list[Action]:
    return item_actions(title=item.title, description=item.description, content=item.content)


def _record(item: MemoryItem, actions: Sequence[Action]) -> None:
    ItemAction.objects.filter(item=item).delete()
    ItemAction.objects.bulk_create(
        [
            ItemAction(
                bank_id=item.bank_id, item=item, kind=a.kind, value=a.value, excerpt=a.excerpt, risks=",".join(a.risks)
            )
            for a in actions
        ]
    )


def external_text(steps: Sequence[dict] | None) -> str | None:
    """The external content of a run's ``steps``, one text; None when there are no steps to read (the
    origin of an action is then unknown)."""
    if not steps:
        return None
    return "\n".join(
        str(s.get("content") or "") for s in steps if isinstance(s, dict) and s.get("kind") in OBSERVATION_KINDS
    )


def _unapproved(actions: Sequence[Action], known: set, task: str, external: str | None = None) -> list[Action]:
    """The actions neither known nor asked for and, when the run's ``external`` content is known, written
    there; one per excerpt (a command and its package share one)."""
    asks = task_asks(task)
    planted = (lambda a: True) if external is None else task_asks(external)
    wanted = {}
    for a in actions:
        if flaggable(a) and a.key not in known and not asks(a) and planted(a):
            wanted.setdefault(a.excerpt, a)
    return list(wanted.values())


def _finding(item: MemoryItem, a: Action) -> RiskFinding:
    return RiskFinding(
        item=item,
        kind=Kind.UNAPPROVED_ACTION,
        excerpt=a.excerpt,
        found_in=FindingSource.ITEM,
        detector=ACTIONS_DETECTOR,
    )


def items_actions_scan(*, items: Sequence[MemoryItem], task: str = "", steps: Sequence[dict] = ()) -> list[RiskFinding]:
    """Record the actions of items just proposed from one run (``task``: what its user asked, ``steps``: its
    steps) and store a finding per action neither the bank approved nor the task asked for, that the run's
    external content wrote (any such action when there are no steps). Items that are no new proposal
    (``supported_by`` set: a lesson the bank held already) are skipped, as the risk scan skips them."""
    new = [i for i in items if getattr(i, "supported_by", None) is None and i.pk is not None]
    if not new:
        return []
    by_item = {item.pk: _of(item) for item in new}
    external = external_text(steps)
    rows = []
    for item in new:
        known = bank_approved_actions(bank=item.bank, keys=[a.key for a in by_item[item.pk]])
        _record(item, by_item[item.pk])
        rows += [_finding(item, a) for a in _unapproved(by_item[item.pk], known, task, external)]
    return RiskFinding.objects.bulk_create(rows) if rows else []


def item_actions_rescan(*, item: MemoryItem, task: str = "", steps: Sequence[dict] = ()) -> list[RiskFinding]:
    """Record an edited (or just created) item's actions again and return its actions findings now.
    ``task`` and ``steps``: its source run's, when they can still be read (none: its actions' origin is
    unknown, and the task is its experience's while that exists). An approved item's actions before the edit
    count as approved (they were, with it); a finding found again keeps its row (and its confirmation);
    one no longer found is dropped. Returns the item's actions findings now."""
    actions = _of(item)
    known = bank_approved_actions(bank=item.bank, keys=[a.key for a in actions])
    _record(item, actions)
    task = task or (item.experience.task if item.experience_id else "")
    wanted = {a.excerpt: a for a in _unapproved(actions, known, task, external_text(steps))}
    old = RiskFinding.objects.filter(item=item, detector=ACTIONS_DETECTOR)
    have = set(old.filter(excerpt__in=list(wanted)).values_list("excerpt", flat=True))
    old.filter(~Q(excerpt__in=list(wanted))).delete()
    RiskFinding.objects.bulk_create([_finding(item, a) for e, a in wanted.items() if e not in have])
    return list(RiskFinding.objects.filter(item=item, detector=ACTIONS_DETECTOR))


def rows_unapproved_actions(*, bank: Bank, rows: Sequence[dict]) -> list[list[Action]]:
    """For each of ``rows`` (title, description, content: items about to be imported), the actions no
    item ``bank`` approves recommends (those that make a finding). An import has no task: nothing is exempt."""
    per_row = [item_actions(title=r["title"], description=r["description"], content=r["content"]) for r in rows]
    known = bank_approved_actions(bank=bank, keys=[a.key for actions in per_row for a in actions])
    return [_unapproved(actions, known, "") for actions in per_row]


def item_has_new_action(item: MemoryItem) -> bool:
    """Whether ``item`` recommends an action no item its bank currently approves recommends (recorded by
    the scans): such an item is never approved without a human, finding or not."""
    keys = set(ItemAction.objects.filter(item=item).values_list("kind", "value"))
    return bool(keys - bank_approved_actions(bank=item.bank, keys=keys))
