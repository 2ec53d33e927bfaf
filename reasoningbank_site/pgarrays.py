"""psycopg's text-format list dumper, escaping array elements with
``bytes.replace`` instead of a regular expression with a replacement template.

Django inserts several rows at once (``bulk_create``) as one ``UNNEST`` of one
array per column, and the client-side cursor writes each array as text: every
``"`` and ``\\`` of every element is escaped. psycopg does it with
``re.sub(rb'(["\\\\])', rb"\\\\\\1", element)``, which on Python 3.11 expands the
template in Python once per match: a batch of 100 trajectories has ~18,000
quotes in its JSON columns, a third of the batch's CPU time. The bytes written
are the same (tests/reasoningbank_site/test_pgarrays.py). Registered once, for
every connection opened after (trajectories.apps), by ``register``."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import psycopg
from psycopg.abc import Buffer
from psycopg.types.array import ListDumper as PsycopgListDumper


class ListDumper(PsycopgListDumper):
    def _dump_list(self, obj: list[Any], tokens: list[Buffer], needs_quotes: Callable[[Buffer], object]) -> None:
        """psycopg's, but escaping with bytes.replace (backslashes first, then double quotes)."""
        if not obj:
            tokens.append(b"{}")
            return
        dump = self.sub_dumper.dump if self.sub_dumper else self._dump_item
        delimiter = self.delimiter
        tokens.append(b"{")
        for item in obj:
            if item is None:
                tokens.append(b"NULL")
            elif isinstance(item, list):
                self._dump_list(item, tokens, needs_quotes)
            elif (ad := dump(item)) is None:
                tokens.append(b"NULL")
            else:
                if needs_quotes(ad):
                    ad = b'"' + bytes(ad).replace(b"\\", b"\\\\").replace(b'"', b'\\"') + b'"'
                tokens.append(ad)
            tokens.append(delimiter)
        tokens[-1] = b"}"


def register() -> None:
    """Use ListDumper for lists in text format on every connection opened from now on, if psycopg's
    ``_dump_list`` (a private method) still has the shape overridden here; otherwise keep psycopg's own, slower
    but correct, rather than fail on every bulk insert after an upgrade."""
    if list(inspect.signature(PsycopgListDumper._dump_list).parameters) != ["self", "obj", "tokens", "needs_quotes"]:
        return
    psycopg.adapters.register_dumper(list, ListDumper)
