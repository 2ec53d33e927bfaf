"""Versioned prompt files. ``judge_v1.txt`` is version ``judge/v1``; a new
wording is a new file (``judge_v2.txt``) so every Judgment and MemoryItem can
say which words produced it. Placeholders are ``$name`` (string.Template), so
braces in a prompt need no escaping and data never gets re-interpreted."""

from __future__ import annotations

import functools
import re
from pathlib import Path
from string import Template

PROMPT_DIR = Path(__file__).resolve().parent
NAMES = ("judge", "distill_success", "distill_failure", "matts_parallel", "matts_sequential")


@functools.cache
def prompt_load(name: str, version: int | None = None) -> tuple[str, str]:
    """``(text, "name/vN")`` for the given or the newest version of prompt
    ``name``. Raises FileNotFoundError for an unknown name or version."""
    if version is None:
        found = [
            int(m.group(1))
            for p in PROMPT_DIR.glob(f"{name}_v*.txt")
            if (m := re.fullmatch(rf"{name}_v(\d+)\.txt", p.name))
        ]
        if not found:
            raise FileNotFoundError(f"no prompt file {name}_v<N>.txt in {PROMPT_DIR}")
        version = max(found)
    path = PROMPT_DIR / f"{name}_v{version}.txt"
    return path.read_text(encoding="utf-8"), f"{name}/v{version}"


def prompt_render(name: str, **values: str) -> tuple[str, str]:
    """The newest ``name`` prompt with its ``$placeholders`` filled:
    ``(text, version)``. Raises KeyError for a missing placeholder value."""
    text, version = prompt_load(name)
    return Template(text).substitute(**values), version
