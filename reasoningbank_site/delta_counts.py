"""Counts maintained instead of recounted: a table of signed delta rows, one
per write that moves a counted row's key, written by PostgreSQL triggers on the
counted table, merged by a beat task (compact), summed on read.

A ``DeltaCounts`` names the delta table, the counted table and the key: each
column of the delta table with the SQL expression over a counted row that
fills it (``{row}`` stands for the row: ``r`` in a statement's transition
table, ``OLD`` or ``NEW`` in a row trigger). Its triggers fire on INSERT and
DELETE per statement (a bulk insert or a bank's deletion writes one row per
key, not one per counted row) and on UPDATE OF the columns the key reads, per
row, only when the key moved: -1 for the old key, +1 for the new. So every
write path, the later ones included, is counted with no code on the path.

The readers sum ``n`` per key; keys whose rows sum to zero are dropped by
compaction (a deleted bank's leave nothing)."""

from __future__ import annotations

from dataclasses import dataclass

import pgtrigger
from django.db import connection, transaction


@dataclass(frozen=True)
class DeltaCounts:
    table: str  # the delta table: the key's columns and ``n``
    counted: str  # the counted table
    name: str  # the triggers' names start with it
    key: tuple[tuple[str, str], ...]  # (delta column, SQL expression over ``{row}``), in order
    updated: tuple[str, ...]  # the counted table's columns the key reads: an UPDATE OF them may move it

    @property
    def _columns(self) -> str:
        return ", ".join(column for column, _ in self.key)

    def _row(self, row: str) -> str:
        return ", ".join(expression.format(row=row) for _, expression in self.key)

    @property
    def _into(self) -> str:
        return f"INSERT INTO {self.table} ({self._columns}, n)"

    def _statement_func(self, rows: str, sign: str) -> str:
        """An INSERT or DELETE statement's rows (its transition table), one delta row per key."""
        groups = ", ".join(str(position) for position in range(1, len(self.key) + 1))
        return f"""
{self._into}
SELECT {self._row("r")}, {sign}COUNT(*) FROM {rows} r GROUP BY {groups};
RETURN NULL;
"""

    def _moved(self) -> str:
        """The row trigger's condition: a plain column of the key changed, then a computed one."""
        plain = [e for _, e in self.key if e.startswith("{row}.") and e.removeprefix("{row}.").isidentifier()]
        computed = [e for _, e in self.key if e not in plain]
        return " OR ".join(f"{e.format(row='OLD')} IS DISTINCT FROM {e.format(row='NEW')}" for e in plain + computed)

    def triggers(self) -> list[pgtrigger.Trigger]:
        """The counted model's triggers (its Meta's ``triggers``)."""
        return [
            pgtrigger.Trigger(
                name=f"{self.name}_insert",
                when=pgtrigger.After,
                operation=pgtrigger.Insert,
                level=pgtrigger.Statement,
                referencing=pgtrigger.Referencing(new="new_rows"),
                func=self._statement_func("new_rows", ""),
            ),
            pgtrigger.Trigger(
                name=f"{self.name}_delete",
                when=pgtrigger.After,
                operation=pgtrigger.Delete,
                level=pgtrigger.Statement,
                referencing=pgtrigger.Referencing(old="old_rows"),
                func=self._statement_func("old_rows", "-"),
            ),
            pgtrigger.Trigger(
                name=f"{self.name}_move",
                when=pgtrigger.After,
                operation=pgtrigger.UpdateOf(*self.updated),
                condition=pgtrigger.Condition(self._moved()),
                func=f"""
{self._into} VALUES ({self._row("OLD")}, -1), ({self._row("NEW")}, 1);
RETURN NULL;
""",
            ),
        ]

    @property
    def fill_sql(self) -> str:
        """Counts the counted table as it is (the migration that adds the triggers runs it)."""
        groups = ", ".join(str(position) for position in range(1, len(self.key) + 1))
        return f"""
{self._into}
SELECT {self._row(self.counted)}, COUNT(*)
FROM {self.counted} GROUP BY {groups}
"""

    def compact(self) -> int:
        """Merge the delta rows into one row per key and drop keys that sum to zero; return the rows left.

        One statement: the rows up to the last id are deleted and their sums per key written back. DELETE ...
        RETURNING yields exactly the rows this transaction removed: a row a concurrent compaction removed first
        is skipped, rows the triggers add meanwhile are past the id, so no delta is lost or counted twice."""
        groups = ", ".join(str(position) for position in range(1, len(self.key) + 1))
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute(f"SELECT MAX(id) FROM {self.table}")
            (last,) = cursor.fetchone()
            if last is None:
                return 0
            cursor.execute(
                f"WITH gone AS (DELETE FROM {self.table} WHERE id <= %s RETURNING {self._columns}, n)\n"
                f"{self._into}\nSELECT {self._columns}, SUM(n) FROM gone GROUP BY {groups} HAVING SUM(n) <> 0",
                [last],
            )
            return cursor.rowcount
