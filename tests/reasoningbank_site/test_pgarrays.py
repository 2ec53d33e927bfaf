"""The list dumper every connection uses (reasoningbank_site.pgarrays) writes
exactly the bytes psycopg's does, and arrays round-trip through PostgreSQL."""

import json

import pytest
from django.db import connection
from psycopg.adapt import PyFormat, Transformer
from psycopg.types.array import ListDumper as PsycopgListDumper

from reasoningbank_site import pgarrays

pytestmark = pytest.mark.django_db

TRICKY = [
    'say "hi"',
    'back\\slash \\" both',
    "",
    "NULL",
    None,
    "a,b {c} d",
    "  spaces  ",
    "café — ✓",
    json.dumps({"thought": 'He said "go"', "path": "C:\\tmp\\x", "nested": ['\\"', None]}),
]


def _dump(cls, value):
    dumper = cls(list, Transformer(connection.connection))
    return bytes(dumper.upgrade(value, PyFormat.TEXT).dump(value))


def test_every_connection_dumps_lists_with_it_and_the_bytes_are_psycopgs():
    connection.ensure_connection()
    assert connection.connection.adapters.get_dumper(list, PyFormat.TEXT) is pgarrays.ListDumper
    for value in (TRICKY, [TRICKY[:3], TRICKY[3:6]], [], [None], [1, 2, 3]):
        assert _dump(pgarrays.ListDumper, value) == _dump(PsycopgListDumper, value), value


def test_text_and_json_arrays_round_trip():
    with connection.cursor() as cursor:
        cursor.execute("SELECT %s::text[]", [TRICKY])
        assert cursor.fetchone()[0] == TRICKY
        documents = [{"text": t} for t in TRICKY]
        cursor.execute(
            "SELECT array_agg(d ORDER BY n) FROM unnest(%s::jsonb[]) WITH ORDINALITY AS u(d, n)",
            [[json.dumps(d) for d in documents]],
        )
        assert [json.loads(d) if isinstance(d, str) else d for d in cursor.fetchone()[0]] == documents
