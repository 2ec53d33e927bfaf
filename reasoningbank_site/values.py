"""Numbers and moments that people type or send, parsed into values that
Python and PostgreSQL can always compute with and store.

``ascii_number``: a count or a number in a URL, a query or a form (a release,
an item version) is ASCII digits and nothing else. ``str.isdigit`` also
accepts "²" (which ``int`` refuses) and ``int`` also reads "١٢", " 12" and
"1_2": the one rule here refuses them all.

``moment_problem``: an aware datetime PostgreSQL cannot store. Its
``timestamptz`` takes UTC offsets up to ±15:59 (real time zones span
−12:00 to +14:00) and Python's ``datetime`` ends at year 9999, so
9999-12-31T23:00-02:00 (year 10000 in UTC) cannot even be converted.
API schemas use it through ``Moment``, form fields through
``reasoningbank_site.formfields.BoundedDateTimeField``."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Annotated

from pydantic import AfterValidator

MAX_NUMBER_DIGITS = 9  # below 2**31: every integer column can hold it
MAX_UTC_OFFSET = timedelta(hours=15, minutes=59)


def ascii_number(text, *, max_digits: int = MAX_NUMBER_DIGITS) -> int | None:
    """``text`` (surrounding spaces allowed) as a non-negative integer when it
    is 1 to ``max_digits`` ASCII digits; None for anything else."""
    if not isinstance(text, str):
        return None
    text = text.strip()
    if 0 < len(text) <= max_digits and text.isascii() and text.isdigit():
        return int(text)
    return None


def _offset_label(offset: timedelta) -> str:
    sign, seconds = ("-", -offset) if offset < timedelta(0) else ("+", offset)
    minutes = int(seconds.total_seconds()) // 60
    return f"{sign}{minutes // 60:02d}:{minutes % 60:02d}"


def moment_problem(value: datetime) -> str | None:
    """Why the aware ``value`` cannot be stored (a sentence), or None when it can.
    A naive ``value`` is left to the caller (it has no offset to check)."""
    offset = value.utcoffset()
    if offset is None:
        return None
    if abs(offset) > MAX_UTC_OFFSET:
        return f"the UTC offset {_offset_label(offset)} is beyond ±15:59; give the moment in UTC (Z) or a real offset"
    try:
        value.astimezone(UTC)
    except OverflowError:
        return "it falls outside years 1 to 9999 once converted to UTC; give a moment up to year 9999"
    return None


def _storable(value: datetime) -> datetime:
    problem = moment_problem(value)
    if problem:
        raise ValueError(problem)
    return value


# A datetime of an API body or query that the database can store (see moment_problem).
Moment = Annotated[datetime, AfterValidator(_storable)]
