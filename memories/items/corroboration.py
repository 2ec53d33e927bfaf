"""An item's independent sources: the trajectories it was learnt from (its
experience's, the ones it cites) and those of its evidence (a lesson
distilled again, an item merged into it), counted three ways and kept on the
item, so serving filters on them inside the vector search:

- ``corroborating_runs``: distinct runs; the rollouts of one MaTTS group
  (``group_id``) are one run, and a run distilled twice counts once;
- ``corroborating_agents``: distinct agent names (a run that names no agent
  tells no agent apart, so it adds none);
- ``corroborating_tokens``: distinct API tokens that sent the runs (a run
  uploaded without a token adds none).

Refreshed wherever evidence is added (``memory_items_propose`` for new
items, ``_supports_add`` for seen-again and merged evidence), from every
source recorded so far: a trajectory deleted later still counted when it
was seen. The trajectory model is reached by relation name: this app never
imports the trajectories app."""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence

from django.db.models import Q

from memories.items.experiences import Experience
from memories.items.models import MemoryItem, MemoryItemSupport, SupportKind

COUNT_FIELDS = ("corroborating_runs", "corroborating_agents", "corroborating_tokens")
# Evidence that names the runs of the same lesson (a repeat is evidence on a refused item: never served).
EVIDENCE_KINDS = (SupportKind.DISTILLED, SupportKind.MERGED)


def _trajectories():
    return Experience._meta.get_field("trajectories").related_model.objects


def _cited(cited_steps) -> set[str]:
    return {str(c["trajectory"]) for c in cited_steps or () if isinstance(c, dict) and c.get("trajectory")}


def source_counts(rows: Sequence[dict]) -> tuple[int, int, int]:
    """(runs, agents, tokens) of trajectory rows (``id``, ``group_id``, ``agent``, ``token_id``)."""
    runs = {f"g:{r['group_id']}" if r["group_id"] else f"t:{r['id']}" for r in rows}
    agents = {r["agent"] for r in rows if r["agent"]}
    tokens = {r["token_id"] for r in rows if r["token_id"] is not None}
    return len(runs), len(agents), len(tokens)


def items_corroboration_refresh(
    items: Sequence[MemoryItem], *, pending: Mapping[int, Sequence[str]] | None = None
) -> None:
    """Count the independent sources of ``items`` (saved items) and store
    them (on the rows and the objects), in three queries. ``pending``:
    trajectory public ids by item pk that the caller links in this
    transaction but has not written yet (a new experience)."""
    items = [item for item in items if item.pk is not None]
    if items:
        sources_count(items, supports=MemoryItemSupport, trajectories=_trajectories(), pending=pending)
        MemoryItem.objects.bulk_update(items, COUNT_FIELDS)


def sources_count(items, *, supports, trajectories, pending=None) -> None:
    """Set the ``corroborating_*`` counts of ``items`` (not saved): read their
    evidence from the ``supports`` model and their runs from the
    ``trajectories`` manager (the migration that added the counts passes its
    historical models)."""
    experiences: dict[int, set[int]] = {item.pk: {item.experience_id} - {None} for item in items}
    named: dict[int, set[str]] = {
        item.pk: _cited(item.cited_steps) | set((pending or {}).get(item.pk, ())) for item in items
    }
    evidence = supports.objects.filter(item_id__in=list(experiences), kind__in=EVIDENCE_KINDS)
    for row in evidence.values("item_id", "experience_id", "trajectory_ids"):
        if row["experience_id"] is not None:
            experiences[row["item_id"]].add(row["experience_id"])
        named[row["item_id"]].update(str(t) for t in row["trajectory_ids"] or () if isinstance(t, str))
    named = {pk: _uuids(ids) for pk, ids in named.items()}
    rows = list(
        trajectories.filter(
            Q(experience_id__in=set().union(*experiences.values())) | Q(public_id__in=set().union(*named.values()))
        ).values("id", "public_id", "experience_id", "group_id", "agent", "token_id")
    )
    for item in items:
        mine = [r for r in rows if r["experience_id"] in experiences[item.pk] or str(r["public_id"]) in named[item.pk]]
        item.corroborating_runs, item.corroborating_agents, item.corroborating_tokens = source_counts(mine)


def _uuids(values) -> set[str]:
    """The valid UUIDs among ``values``, in canonical form."""
    out = set()
    for value in values:
        try:
            out.add(str(uuid.UUID(str(value))))
        except ValueError:
            continue
    return out
