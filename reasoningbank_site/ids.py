"""Time-ordered public ids (UUID version 7, RFC 9562)."""

from __future__ import annotations

import os
import time
import uuid


def uuid7() -> uuid.UUID:
    """A UUID version 7: the Unix time in milliseconds in its first 48 bits,
    then 74 random bits (RFC 9562 §5.7). Ids made later sort later (to the
    millisecond), so the time an id was issued can be read back from it
    (``uuid7_issued_at``), and a B-tree index on them is appended to rather than
    written all over. Python 3.14's ``uuid.uuid7`` does the same; this is for 3.11."""
    millis = time.time_ns() // 1_000_000
    rand = int.from_bytes(os.urandom(10), "big")  # 80 bits, 74 used
    value = (millis & ((1 << 48) - 1)) << 80
    value |= 0x7 << 76  # version
    value |= ((rand >> 62) & 0xFFF) << 64  # rand_a, 12 bits
    value |= 0b10 << 62  # variant (RFC 9562)
    value |= rand & ((1 << 62) - 1)  # rand_b, 62 bits
    return uuid.UUID(int=value)


def uuid7_issued_at(value: uuid.UUID) -> float | None:
    """The Unix time (seconds) a version 7 UUID says it was issued at; None for another version."""
    if value.version != 7:
        return None
    return (value.int >> 80) / 1000.0
