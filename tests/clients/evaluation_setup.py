"""Building evaluation runs for the scripted agent (tests/clients/eval_agent.py), with real releases.

The vault tasks: the agent knows the codes of ``v1`` and ``v2`` on its own (their ``prior``), not those of
``v3`` and ``v4``; each task's check is the right code. Lessons are ``answer for <task id>: <code>`` lines:

- ``helpful_candidate(bank, approved)``: production (release 1) serves the right code for ``v3``; the
  candidate (release 2) adds the right code for ``v4``. Expected successes per task: none and control
  ``v1 v2``, production ``v1 v2 v3``, candidate all four.
- ``harmful_candidate``: production serves ``v3``'s right code; the candidate adds a WRONG code for ``v1``
  and ``v2``: it fails where production succeeds (``v3`` only).
- ``equal_candidate``: the candidate adds a lesson with no code: it succeeds exactly where production does.

Pass the bank, then create the run with ``release=2``."""

from __future__ import annotations

import json

from django.db import transaction

from memories.releases.labels import releasing_locked
from memories.releases.models import ReleaseSource
from memories.releases.publishing import release_mode_set, release_write
from memories.releases.selectors import bank_releasing

CODES = {"v1": "1111", "v2": "2222", "v3": "3333", "v4": "4444"}
PRIOR = {"v1": "1111", "v2": "2222"}


def vault_tasks(**metadata_by_key: dict) -> list[dict]:
    """The four vault tasks (JSONL rows), with extra metadata per task key when given."""
    rows = []
    for key, code in CODES.items():
        metadata = {**({"prior": PRIOR[key]} if key in PRIOR else {}), **metadata_by_key.get(key, {})}
        rows.append(
            {
                "id": key,
                "task": f"Open vault {key} and report its code",
                "metadata": metadata,
                "check": {"type": "equals", "value": code},
            }
        )
    return rows


def vault_jsonl(**metadata_by_key: dict) -> bytes:
    return "".join(json.dumps(row) + "\n" for row in vault_tasks(**metadata_by_key)).encode()


def lesson(approved, bank, key: str, code: str | None, title: str = ""):
    content = (
        f"When a task asks for a vault's code, the answer for {key}: {code}."
        if code
        else ("Vault codes are six characters long; read the task before answering.")
    )
    return approved(bank, title or f"The code of vault {key}", "Use when a task asks for a vault's code.", content)


def serve_every_lesson(bank) -> None:
    """Every approved lesson is served for every vault task: no similarity floor, duplicates kept."""
    bank.min_similarity = -1.0
    bank.duplicate_threshold = 1.0  # the lessons differ in one code: near-duplicates, served together all the same
    bank.top_k = 10
    bank.save(update_fields=["min_similarity", "duplicate_threshold", "top_k"])


def _production_then_candidate(bank, approved, production: list, candidate: list) -> int:
    """Release 1 (production) of ``production`` lessons, release 2 (not served) adding ``candidate``'s."""
    serve_every_lesson(bank)
    for key, code in production:
        lesson(approved, bank, key, code)
    assert bank_releasing(bank=bank).production.number == 1
    release_mode_set(bank=bank, mode="manual")
    for n, (key, code) in enumerate(candidate):
        lesson(approved, bank, key, code, title=f"Candidate lesson {n} on vault {key}")
    with transaction.atomic():
        release = release_write(releasing=releasing_locked(bank=bank), source=ReleaseSource.PUBLISHED)
    assert release is not None and release.number == 2
    assert bank_releasing(bank=bank).production.number == 1
    return release.number


def helpful_candidate(bank, approved) -> int:
    return _production_then_candidate(bank, approved, [("v3", CODES["v3"])], [("v4", CODES["v4"])])


def harmful_candidate(bank, approved) -> int:
    return _production_then_candidate(bank, approved, [("v3", CODES["v3"])], [("v1", "9999"), ("v2", "9999")])


def equal_candidate(bank, approved) -> int:
    return _production_then_candidate(bank, approved, [("v3", CODES["v3"])], [("v4", None)])
