"""Building evaluation runs for the scripted agent (tests/clients/eval_agent.py), with real releases.

The vault tasks ``v1`` … ``vN`` (``n`` of them, 4 by default): the agent knows the codes of the first
half on its own (their ``prior``), not those of the second half; each task's check is the right code
(``code(key)``). A lesson holds ``answer for <task id>: <code>`` lines, one per task it speaks of.

- ``helpful_candidate(bank, approved, n)``: production (release 1) serves the right code of the first
  unknown task; the candidate (release 2) adds the right codes of the other unknown ones. It succeeds on
  every task, production on the known half and one more, the no-memory arm and the control on the known
  half (n = 4: candidate v1–v4, production v1 v2 v3, none and control v1 v2).
- ``harmful_candidate``: the candidate adds WRONG codes for the known half: it fails where production
  succeeds (n = 4: candidate v3 only).
- ``equal_candidate``: the candidate adds a lesson with no code: it succeeds exactly where production does.

Each returns the candidate's release number (2): ``create_evaluation(..., release=2)``. Every lesson of a
release is served for every task (``serve_every_lesson``), so the verdicts follow the lessons alone; with
n = 20 and k = 3, helpful is "better" than production, harmful "worse" and equal "no difference shown"."""

from __future__ import annotations

import json

from django.db import transaction

from memories.releases.labels import releasing_locked
from memories.releases.models import ReleaseSource
from memories.releases.publishing import release_mode_set, release_write
from memories.releases.selectors import bank_releasing


def keys(n: int = 4) -> list[str]:
    return [f"v{i}" for i in range(1, n + 1)]


def code(key: str) -> str:
    """The right code of vault ``key``: v1 1111, v2 2222, … v10 11110."""
    return str(1111 * int(key[1:]))


def known(n: int = 4) -> list[str]:
    """The tasks whose code the agent knows on its own: the first half."""
    return keys(n)[: n // 2]


def unknown(n: int = 4) -> list[str]:
    return keys(n)[n // 2 :]


CODES = {key: code(key) for key in keys(4)}


def vault_tasks(n: int = 4, **metadata_by_key: dict) -> list[dict]:
    """The vault tasks (JSONL rows), with extra metadata per task key when given."""
    rows = []
    for key in keys(n):
        metadata = {**({"prior": code(key)} if key in known(n) else {}), **metadata_by_key.get(key, {})}
        rows.append(
            {
                "id": key,
                "task": f"Open vault {key} and report its code",
                "metadata": metadata,
                "check": {"type": "equals", "value": code(key)},
            }
        )
    return rows


def vault_jsonl(n: int = 4, **metadata_by_key: dict) -> bytes:
    return "".join(json.dumps(row) + "\n" for row in vault_tasks(n, **metadata_by_key)).encode()


def lesson_of(approved, bank, answers: dict[str, str], title: str):
    """An approved lesson giving ``answers`` ({task id: code}; none: a lesson with no code)."""
    lines = [f"The answer for {key}: {value}." for key, value in answers.items()]
    content = " ".join(lines) or "Vault codes are digits only; read the task before answering."
    return approved(bank, title, "Use when a task asks for a vault's code.", content)


def lesson(approved, bank, key: str, value: str | None, title: str = ""):
    """An approved lesson giving the code ``value`` of vault ``key`` (None: no code)."""
    return lesson_of(approved, bank, {key: value} if value else {}, title or f"The code of vault {key}")


def serve_every_lesson(bank) -> None:
    """Every approved lesson is served for every vault task: no similarity floor, duplicates kept."""
    bank.min_similarity = -1.0
    bank.duplicate_threshold = 1.0  # the lessons differ in their codes: near-duplicates, served together all the same
    bank.top_k = 10
    bank.save(update_fields=["min_similarity", "duplicate_threshold", "top_k"])


def _production_then_candidate(bank, approved, n: int, candidate: dict[str, str]) -> int:
    """Release 1 (production): the right code of the first unknown task; release 2 (not served) adds
    one lesson with ``candidate``'s answers."""
    serve_every_lesson(bank)
    first = unknown(n)[0]
    lesson(approved, bank, first, code(first))
    assert bank_releasing(bank=bank).production.number == 1
    release_mode_set(bank=bank, mode="manual")
    lesson_of(approved, bank, candidate, "The candidate's vault codes")
    with transaction.atomic():
        release = release_write(releasing=releasing_locked(bank=bank), source=ReleaseSource.PUBLISHED)
    assert release is not None and release.number == 2
    assert bank_releasing(bank=bank).production.number == 1
    return release.number


def helpful_candidate(bank, approved, n: int = 4) -> int:
    return _production_then_candidate(bank, approved, n, {key: code(key) for key in unknown(n)[1:]})


def harmful_candidate(bank, approved, n: int = 4) -> int:
    return _production_then_candidate(bank, approved, n, {key: "0000" for key in known(n)})  # no right code is 0000


def equal_candidate(bank, approved, n: int = 4) -> int:
    return _production_then_candidate(bank, approved, n, {})
