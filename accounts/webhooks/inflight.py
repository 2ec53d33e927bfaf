"""The per-bank cap on delivery attempts in flight: at most
RB_WEBHOOK_INFLIGHT_PER_BANK attempts of one bank's deliveries run at once,
so one bank's slow receivers cannot take every thread of the webhook worker.

A slot is a PostgreSQL session advisory lock (one of the bank's N keys),
held for the attempt by the worker thread's own connection: a worker that
dies mid-attempt frees its slots with its connection, so none is left taken."""

from __future__ import annotations

import contextlib
import hashlib
import logging
from collections.abc import Iterator

from django.conf import settings
from django.db import DatabaseError, connection

log = logging.getLogger(__name__)

MAX_SLOTS = 64  # a bigger setting counts as this many (one query names every slot)


def _slot_key(bank_id: int, slot: int) -> int:
    """A stable signed 64-bit lock key for the bank's ``slot``."""
    digest = hashlib.blake2b(f"webhook-inflight:{bank_id}:{slot}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big", signed=True)


@contextlib.contextmanager
def bank_inflight_slot(*, bank_id: int) -> Iterator[bool]:
    """Take a free attempt slot of the bank for the block: yields True with
    the slot held (released when the block ends), or False when all
    RB_WEBHOOK_INFLIGHT_PER_BANK slots are taken (nothing held). A cap of 0
    means no cap (always True). One query to take, one to release."""
    cap = min(settings.RB_WEBHOOK_INFLIGHT_PER_BANK, MAX_SLOTS)
    if cap <= 0:
        yield True
        return
    keys = [_slot_key(bank_id, slot) for slot in range(cap)]
    # CASE evaluates its WHENs in order and stops at the first true one: at most one lock is taken.
    whens = " ".join(f"WHEN pg_try_advisory_lock(%s) THEN {slot}" for slot in range(cap))
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT CASE {whens} ELSE -1 END", keys)
        slot = cursor.fetchone()[0]
    if slot < 0:
        yield False
        return
    try:
        yield True
    finally:
        try:
            with connection.cursor() as cursor:
                cursor.execute("SELECT pg_advisory_unlock(%s)", [keys[slot]])
        except DatabaseError:
            log.warning("could not release a webhook slot of bank %s; closing the connection frees it", bank_id)
            connection.close()
