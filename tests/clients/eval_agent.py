"""A scripted agent for evaluation runs: its success depends only on the lessons it is served.

Run by the harness once per try (``rb eval run <id> -- python tests/clients/eval_agent.py``), it reads
the try's JSON on stdin and prints one JSON object on stdout. Importable too: ``answer(try_dict)`` is the
same agent for ``client.evaluate(id, answer)``.

Every task asks for the code of one vault. The agent answers with

1. the code a served lesson gives for the task's id: a line ``answer for <task id>: <code>`` anywhere in
   the system block (the first such line wins), else
2. the code it knows on its own: the task's ``metadata["prior"]``, else
3. ``"unknown"``.

Give each task a check ``{"type": "equals", "value": "<the right code>"}`` and the outcome follows:

- a **helpful** release holds lessons with the right code for tasks the agent does not know on its own
  (no ``prior``): the arm serving it succeeds where the no-memory arm fails;
- a **harmful** release holds lessons with a wrong code for tasks the agent knows (``prior`` right): the
  lesson overrides what it knew, and it fails where the no-memory arm succeeds;
- an **equal** release holds lessons with no ``answer for`` line (or only for tasks it already knows,
  with the same code): it succeeds exactly where the no-memory arm does.

The same-budget control is served no lesson, so it behaves as the no-memory arm (it reports the extra
tokens it was given in its metadata). tests/clients/evaluation_setup.py builds the three candidates, in
a bank that serves every lesson of a release for every task (no similarity floor, duplicates kept).

``metadata["behaviour"]`` makes a task misbehave, to exercise the harness: ``"crash"`` (exit 3 with a
message on stderr), ``"garbage"`` (stdout that is not JSON), ``"hang"`` (sleep ``metadata["seconds"]``,
default 60, before answering), ``"slow"`` (sleep ``metadata["seconds"]`` then answer as usual).

Usage is reported as the words of the system block and the task (prompt) and of the answer (completion)."""

from __future__ import annotations

import json
import os
import re
import sys
import time
from typing import Any

LESSON = re.compile(r"answer for ([\w.-]*\w):\s*(\w[\w-]*)")


def lesson_code(system_block: str, key: str) -> str | None:
    """The code the first served lesson gives for task ``key``."""
    for found_key, code in LESSON.findall(system_block or ""):
        if found_key == key:
            return code
    return None


def answer(attempt: dict[str, Any]) -> dict[str, Any]:
    task = attempt["task"]
    key, metadata = str(task["id"]), task.get("metadata") or {}
    served = lesson_code(attempt.get("system_block", ""), key)
    code = served or metadata.get("prior") or "unknown"
    source = "a lesson" if served else ("what it knew" if metadata.get("prior") else "nothing")
    steps = [
        {"thought": f"I need the code of vault {key}.", "action": "read the system block"},
        {"observation": f"took the code from {source}", "action": f"answer {code}"},
    ]
    return {
        "final_answer": code,
        "steps": steps,
        "usage": {
            "prompt_tokens": len((attempt.get("system_block", "") + " " + task.get("text", "")).split()),
            "completion_tokens": 1,
        },
        "metadata": {"source": source, "extra_tokens": int(attempt.get("extra_tokens") or 0)},
    }


def main() -> int:
    attempt = json.load(sys.stdin)
    metadata = attempt["task"].get("metadata") or {}
    behaviour = metadata.get("behaviour", "")
    if behaviour == "crash":
        print(f"vault {attempt['task']['id']} jammed", file=sys.stderr)
        return 3
    if behaviour == "garbage":
        print("thinking about it…")
        return 0
    if behaviour in ("hang", "slow"):
        time.sleep(float(metadata.get("seconds", 60)))
    result = answer(attempt)
    result["metadata"]["env"] = {name: value for name, value in os.environ.items() if name.startswith("RB_EVAL_")}
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
