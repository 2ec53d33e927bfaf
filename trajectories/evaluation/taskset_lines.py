"""An uploaded task set's JSON Lines, checked line by line: every bad line is reported (not only the
first), so a person fixes the file in one go. One task per line:
``{"id": str, "task": str, "metadata"?: {}, "check"?: {"type", "value", "ignore_case"?}, "task_id"?: str}``."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from reasoningbank_site.errors import Invalid, TooLarge
from reasoningbank_site.text import json_depth, scrub_text
from trajectories.evaluation.models import TASK_KEY_MAX

UPLOAD_MAX_BYTES = 5 * 1024 * 1024
UPLOAD_MAX_TASKS = 2000
TASK_TEXT_MAX = 20_000
METADATA_MAX_CHARS = 10_000  # a task's metadata, as JSON
CHECK_VALUE_MAX = 1000
REGEX_MAX = 300  # a check's pattern: kept short, since the harness runs it on every answer
LINE_MAX_DEPTH = 20
ERRORS_LISTED = 5  # lines named in the error's sentence (the "errors" list names them all)
CHECK_TYPES = ("contains", "equals", "regex")
LINE_FIELDS = ("id", "task", "metadata", "check", "task_id")


@dataclass(frozen=True)
class TaskLine:
    key: str
    text: str
    metadata: dict
    check: dict | None
    task_id: str


class LineError(Exception):
    pass


def check_clean(check) -> dict:
    """A success check as stored: {"type", "value", "ignore_case"}. Raises LineError saying what is wrong."""
    if not isinstance(check, dict):
        raise LineError('"check" must be an object: {"type": "contains" | "equals" | "regex", "value": "…"}.')
    unknown = sorted(set(check) - {"type", "value", "ignore_case"})
    if unknown:
        raise LineError(f'"check" has an unknown field: {", ".join(unknown)} (type, value, ignore_case are read).')
    kind = check.get("type")
    if kind not in CHECK_TYPES:
        raise LineError(f'"check.type" must be one of {", ".join(CHECK_TYPES)} (got {json.dumps(kind)[:60]}).')
    value = check.get("value")
    if not isinstance(value, str) or not value:
        raise LineError('"check.value" must be a non-empty string.')
    limit = REGEX_MAX if kind == "regex" else CHECK_VALUE_MAX
    if len(value) > limit:
        raise LineError(f'"check.value" of a {kind} check is at most {limit} characters (got {len(value)}).')
    ignore_case = check.get("ignore_case", False)
    if not isinstance(ignore_case, bool):
        raise LineError('"check.ignore_case" must be true or false.')
    if kind == "regex":
        try:
            re.compile(value)
        except (re.error, RecursionError, OverflowError) as exc:
            raise LineError(f'"check.value" is not a valid regular expression ({exc}).') from None
    return {"type": kind, "value": value, "ignore_case": ignore_case}


def _line(record) -> TaskLine:
    if not isinstance(record, dict):
        raise LineError('each line must be a JSON object: {"id": "…", "task": "…"}.')
    unknown = sorted(set(record) - set(LINE_FIELDS))
    if unknown:
        raise LineError(f"unknown field: {', '.join(unknown)} (a line holds {', '.join(LINE_FIELDS)}).")
    key = record.get("id")
    if isinstance(key, int) and not isinstance(key, bool):
        key = str(key)
    if not isinstance(key, str) or not key.strip():
        raise LineError('"id" is missing or empty: each task needs its own id.')
    key = key.strip()
    if len(key) > TASK_KEY_MAX:
        raise LineError(f'"id" is at most {TASK_KEY_MAX} characters (got {len(key)}).')
    text = record.get("task")
    if not isinstance(text, str) or not text.strip():
        raise LineError('"task" is missing or empty: the text the agent is given.')
    if len(text.strip()) > TASK_TEXT_MAX:
        raise LineError(f'"task" is at most {TASK_TEXT_MAX:,} characters (got {len(text.strip()):,}).')
    metadata = record.get("metadata") or {}
    if not isinstance(metadata, dict):
        raise LineError('"metadata" must be an object.')
    if len(json.dumps(metadata)) > METADATA_MAX_CHARS:
        raise LineError(f'"metadata" is at most {METADATA_MAX_CHARS:,} characters as JSON.')
    check = record.get("check")
    check = None if check is None else check_clean(check)
    task_id = record.get("task_id", key)
    if not isinstance(task_id, str) or len(task_id.strip()) > TASK_KEY_MAX:
        raise LineError(f'"task_id" must be a string of at most {TASK_KEY_MAX} characters.')
    return TaskLine(key=key, text=text.strip(), metadata=metadata, check=check, task_id=task_id.strip())


def task_lines_parse(body: bytes) -> list[TaskLine]:
    """``body`` (JSON Lines, split on ``\\n``; blank lines skipped) as tasks. Raises TooLarge over
    UPLOAD_MAX_BYTES, and Invalid (``details["errors"]``: [{"line", "message"}] for every bad line)
    for text that is not UTF-8, a line that is not a task object, a duplicate id, no task at all or
    more than UPLOAD_MAX_TASKS tasks."""
    if len(body) > UPLOAD_MAX_BYTES:
        raise TooLarge(
            f"A task set file is at most {UPLOAD_MAX_BYTES // (1024 * 1024)} MiB; this one is {len(body):,} bytes."
        )
    try:
        text = body.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise Invalid(
            "The file is not UTF-8 text.", details={"errors": [{"line": 0, "message": "not UTF-8"}]}
        ) from None
    tasks: list[TaskLine] = []
    errors: list[dict] = []
    first_line: dict[str, int] = {}
    for number, raw in enumerate(text.split("\n"), start=1):
        if not raw.strip():
            continue
        try:
            try:
                record = json.loads(raw)
            except json.JSONDecodeError as exc:
                raise LineError(f"not JSON ({exc.msg}).") from None
            except RecursionError:
                raise LineError(f"nested too deeply (at most {LINE_MAX_DEPTH} levels).") from None
            if json_depth(record, LINE_MAX_DEPTH) > LINE_MAX_DEPTH:
                raise LineError(f"nested too deeply (at most {LINE_MAX_DEPTH} levels).")
            if scrub_text(record) is not record:
                raise LineError("holds a NUL character or a lone surrogate, which cannot be stored.")
            task = _line(record)
            if task.key in first_line:
                raise LineError(f'duplicate id "{task.key[:80]}" (first on line {first_line[task.key]}).')
            first_line[task.key] = number
            tasks.append(task)
        except LineError as exc:
            errors.append({"line": number, "message": str(exc)})
    if not errors and not tasks:
        errors.append({"line": 0, "message": "the file holds no task (one JSON object per line)."})
    if len(tasks) > UPLOAD_MAX_TASKS:
        errors.append({"line": 0, "message": f"{len(tasks):,} tasks; a task set holds at most {UPLOAD_MAX_TASKS:,}."})
    if errors:
        named = "; ".join((f"line {e['line']}: " if e["line"] else "") + e["message"] for e in errors[:ERRORS_LISTED])
        more = f" (and {len(errors) - ERRORS_LISTED} more)" if len(errors) > ERRORS_LISTED else ""
        raise Invalid(f"The task set was not saved: {named}{more}", details={"errors": errors})
    return tasks
