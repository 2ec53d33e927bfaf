"""The step archive: before retention clears a batch's steps, they are
written to a gzip JSONL file, one line per trajectory, and fsynced, so a purge
never loses steps that were not archived.

One file per bank and run: ``<RB_STEP_ARCHIVE_DIR>/<bank public id>/steps-<run
time>.jsonl.gz``. Each batch is appended as its own gzip member (concatenated
members are one valid gzip stream), so a crash can leave at most one torn last
member, whose rows were never cleared. Read it back with
``zcat FILE | jq`` (docs/production.md, retention at scale)."""

from __future__ import annotations

import gzip
import json
import os
from pathlib import Path

from django.conf import settings
from django.core.serializers.json import DjangoJSONEncoder
from django.db.models import F, TextField
from django.db.models.functions import Cast

from reasoningbank_site.env import envstr

# What a line holds: enough to tell which trajectory it was, and its raw record (plus "steps", last).
ARCHIVED_FIELDS = ("public_id", "external_id", "task", "created_at", "input_format", "final_answer")


def archived_rows(records):
    """The raw records' (a RawRecord queryset) rows as archive lines need them:
    ARCHIVED_FIELDS (the trajectory's, joined), the pk (the trajectory's), and
    the steps as the database's own JSON text (``steps_json``), which goes into
    the line as it is rather than being parsed and written again."""
    joined = {name: F(f"trajectory__{name}") for name in ("public_id", "external_id", "task", "input_format")}
    return records.values(
        "pk", "created_at", "final_answer", steps_json=Cast("steps", output_field=TextField()), **joined
    )


def _line(row: dict) -> str:
    fields = {name: row[name] for name in ARCHIVED_FIELDS}
    return (
        json.dumps(fields, cls=DjangoJSONEncoder, ensure_ascii=False)[:-1] + ', "steps": ' + row["steps_json"] + "}\n"
    )


def step_archive_dir() -> Path | None:
    """Where archives go: the setting or environment variable
    ``RB_STEP_ARCHIVE_DIR``, by default ``step-archive`` in the data dir
    (``RB_DATA_DIR``); None when it is ``off``."""
    value = getattr(settings, "RB_STEP_ARCHIVE_DIR", None) or envstr("RB_STEP_ARCHIVE_DIR")
    value = (value or str(Path(settings.DATA_DIR) / "step-archive")).strip()
    return None if value.lower() == "off" else Path(value)


def step_archive_path(*, bank, now) -> Path | None:
    """This run's archive file for ``bank`` (not created yet), or None when archiving is off."""
    root = step_archive_dir()
    if root is None:
        return None
    return root / str(bank.public_id) / f"steps-{now:%Y%m%dT%H%M%S%fZ}.jsonl.gz"


def step_archive_append(path: Path, rows: list[dict]) -> None:
    """Append ``rows`` (from ``archived_rows``) to ``path`` as one gzip member
    and fsync it (and its directory, when the file is new) before returning.
    Raises OSError (disk full, permissions) with nothing cleared yet."""
    body = "".join(_line(row) for row in rows)
    created = not path.exists()
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    # Owner-only: raw steps can hold personal data.
    with os.fdopen(os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600), "ab") as handle:
        handle.write(gzip.compress(body.encode(), compresslevel=6))
        handle.flush()
        os.fsync(handle.fileno())
    if created:
        directory = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(directory)
        finally:
            os.close(directory)
