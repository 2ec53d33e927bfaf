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


# What every wording of a prompt must keep: the placeholders the pipeline
# fills, and the markers of the answer format its parser reads
# (trajectories.pipeline.parsing). A bank's own version is refused without them.
ITEM_FORMAT = ("# Memory Item", "## Title", "## Description", "## Content")
REQUIRED_PLACEHOLDERS = {
    "judge": ("trajectory",),
    "distill_success": ("trajectory", "max_items"),
    "distill_failure": ("trajectory", "max_items"),
    "matts_parallel": ("rollouts", "max_items"),
    "matts_sequential": ("trajectory", "max_items"),
}
REQUIRED_FORMAT = {
    "judge": ('"verdict"', '"rationale"'),
    "distill_success": ITEM_FORMAT,
    "distill_failure": ITEM_FORMAT,
    "matts_parallel": ITEM_FORMAT,
    "matts_sequential": ITEM_FORMAT,
}
MAX_PROMPT_CHARS = 20_000


def prompt_problems(name: str, text: str) -> list[str]:
    """Why ``text`` cannot be prompt ``name`` (empty when it can): a missing
    or unknown ``$placeholder``, a stray ``$``, a missing answer-format marker,
    or too long. Each problem is a sentence for the person editing it."""
    allowed = REQUIRED_PLACEHOLDERS[name]
    problems = []
    if len(text) > MAX_PROMPT_CHARS:
        problems.append(f"The prompt has {len(text):,} characters; the limit is {MAX_PROMPT_CHARS:,}.")
    template = Template(text)
    if not template.is_valid():
        problems.append("A '$' is not followed by a placeholder name; write '$$' for a literal dollar sign.")
    found = set(template.get_identifiers())
    for placeholder in allowed:
        if placeholder not in found:
            problems.append(f"The placeholder ${placeholder} is missing: the pipeline puts the record there.")
    unknown = sorted(found - set(allowed))
    if unknown:
        names = ", ".join(f"${u}" for u in unknown)
        problems.append(
            f"Unknown {'placeholder' if len(unknown) == 1 else 'placeholders'} {names}: this prompt may use {', '.join('$' + a for a in allowed)}."
        )
    for marker in REQUIRED_FORMAT[name]:
        if marker not in text:
            problems.append(f"The answer format instruction must keep {marker}: the parser reads the answer by it.")
    return problems


def prompt_fill(text: str, **values: str) -> str:
    """Fill the ``$placeholders`` of a prompt's text (validated by prompt_problems)."""
    return Template(text).substitute(**values)
