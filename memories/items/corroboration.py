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

Counted in SQL from every source recorded so far, wherever evidence is added:
``items_corroboration_refresh`` for new items (one UPDATE … RETURNING, none
when they name no run), and ``corroboration_counts`` inside the statement
that grows the ``support_count`` of items seen again or merged into (no
statement of its own). A trajectory deleted later still counted when it was
seen. The trajectory table is reached by relation name: this app never
imports the trajectories app."""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping, Sequence

from django.db import connection
from django.db.models import IntegerField
from django.db.models.expressions import RawSQL

from memories.items.experiences import Experience
from memories.items.models import MemoryItem, MemoryItemSupport, SupportKind

COUNT_FIELDS = ("corroborating_runs", "corroborating_agents", "corroborating_tokens")
# Evidence that names the runs of the same lesson (a repeat is evidence on a refused item: never served).
EVIDENCE_KINDS = (SupportKind.DISTILLED, SupportKind.MERGED)
# What tells sources apart, per count: a MaTTS group is one run; an empty agent name and no token tell nothing.
_KEYS = {
    "corroborating_runs": "CASE WHEN t.group_id <> '' THEN 'g:' || t.group_id ELSE 't:' || t.id::text END",
    "corroborating_agents": "NULLIF(t.agent, '')",
    "corroborating_tokens": "t.token_id",
}
_UUID = "^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$"


class Sources:
    """Sources of items not written yet (a new experience, evidence about to be inserted): experience ids and
    trajectory public ids, by item pk."""

    def __init__(self) -> None:
        self.experiences: dict[int, set[int]] = {}
        self.trajectories: dict[int, set[str]] = {}

    def add(self, pk: int, *, experience_id: int | None = None, trajectory_ids: Iterable = ()) -> None:
        if experience_id is not None:
            self.experiences.setdefault(pk, set()).add(experience_id)
        self.trajectories.setdefault(pk, set()).update(_uuids(trajectory_ids))


def _uuids(values) -> set[str]:
    """The valid UUIDs among ``values``, in canonical form."""
    out = set()
    for value in values:
        try:
            out.add(str(uuid.UUID(str(value))))
        except ValueError:
            continue
    return out


def _by_item(values: Mapping[int, set], cast: str) -> tuple[str, list]:
    """A CASE on the item's id giving its array of ``values`` (an empty array for the others)."""
    whens, params = [], []
    for pk, found in values.items():
        if found:
            whens.append(f"WHEN %s THEN %s::{cast}[]")
            params += [pk, sorted(found)]
    if not whens:
        return f"'{{}}'::{cast}[]", []
    return f"(CASE {{item}}.id {' '.join(whens)} ELSE '{{}}'::{cast}[] END)", params


def _count_sql(field: str, pending: Sources) -> tuple[str, list]:
    """The count ``field`` of the item of the statement's row, as SQL: distinct keys among the trajectories of
    its bank that its experience, its cited steps, its evidence (supports) or ``pending`` name."""
    item = connection.ops.quote_name(MemoryItem._meta.db_table)
    support = connection.ops.quote_name(MemoryItemSupport._meta.db_table)
    trajectory = connection.ops.quote_name(Experience._meta.get_field("trajectories").related_model._meta.db_table)
    kinds = ", ".join(f"'{kind}'" for kind in EVIDENCE_KINDS)
    evidence = f"FROM {support} s WHERE s.item_id = {item}.id AND s.kind IN ({kinds})"
    named = (
        f"SELECT x FROM (SELECT jsonb_array_elements_text(s.trajectory_ids) AS x {evidence} "
        f"AND jsonb_typeof(s.trajectory_ids) = 'array' UNION ALL SELECT c ->> 'trajectory' FROM jsonb_array_elements("
        f"CASE WHEN jsonb_typeof({item}.cited_steps) = 'array' THEN {item}.cited_steps ELSE '[]'::jsonb END) c) n"
    )
    experiences, experience_params = _by_item(pending.experiences, "integer")
    trajectories, trajectory_params = _by_item(pending.trajectories, "uuid")
    sql = (
        f"SELECT COUNT(DISTINCT {_KEYS[field]}) FROM {trajectory} t WHERE t.bank_id = {item}.bank_id AND ("
        f"t.experience_id = {item}.experience_id OR t.experience_id IN (SELECT s.experience_id {evidence}) "
        f"OR t.public_id IN (SELECT CASE WHEN x ~ %s THEN x::uuid END FROM ({named}) ids) "
        f"OR t.experience_id = ANY({experiences}) OR t.public_id = ANY({trajectories}))"
    )
    return sql.replace("{item}", item), [_UUID, *experience_params, *trajectory_params]


def corroboration_counts(pending: Sources | None = None) -> dict[str, RawSQL]:
    """The three counts as expressions for an UPDATE of MemoryItem rows (``queryset.update(**…)``)."""
    pending = pending or Sources()
    out = {}
    for field in COUNT_FIELDS:
        sql, params = _count_sql(field, pending)
        out[field] = RawSQL(f"({sql})", params, output_field=IntegerField())
    return out


def _names_a_source(item: MemoryItem, pending: Sources) -> bool:
    cited = any(isinstance(c, dict) and c.get("trajectory") for c in item.cited_steps or ())
    return bool(item.experience_id or cited or pending.experiences.get(item.pk) or pending.trajectories.get(item.pk))


def items_corroboration_refresh(items: Sequence[MemoryItem], *, pending: Sources | None = None) -> None:
    """Count the independent sources of ``items`` (saved) and store them, on
    the rows and the objects, in one statement (none when no item names an
    experience, a cited run or a ``pending`` source)."""
    pending = pending or Sources()
    items = [i for i in items if i.pk is not None and _names_a_source(i, pending)]
    if not items:
        return
    counts = corroboration_counts(pending)
    table = connection.ops.quote_name(MemoryItem._meta.db_table)
    sets, params = [], []
    for field in COUNT_FIELDS:
        sql, field_params = counts[field].sql, counts[field].params
        sets.append(f"{connection.ops.quote_name(field)} = {sql}")
        params += list(field_params)
    with connection.cursor() as cursor:
        cursor.execute(
            f"UPDATE {table} SET {', '.join(sets)} WHERE {table}.id = ANY(%s) RETURNING id, {', '.join(COUNT_FIELDS)}",
            [*params, [i.pk for i in items]],
        )
        found = {row[0]: row[1:] for row in cursor.fetchall()}
    for item in items:
        item.corroborating_runs, item.corroborating_agents, item.corroborating_tokens = found[item.pk]
