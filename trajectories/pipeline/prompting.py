"""Rendering untrusted trajectory text into a prompt: neutralized (a
trajectory cannot close our delimiting tags and talk to the model), cut to a
character budget with every cut marked, and the MaTTS group's rollouts side
by side."""

from __future__ import annotations

import re

from django.conf import settings

from reasoningbank_site.text import counted
from trajectories.models import Trajectory

EXCERPT_CHARS = 500

_OUR_TAGS = re.compile(
    r"<(\s*/?\s*)(trajectory|task|steps|final_answer|rollouts|rollout|examples|example)\b", re.IGNORECASE
)


def neutralize(text: str) -> str:
    """Make ``text`` unable to open or close one of our delimiting tags (it is
    data: a trajectory must not end its own block and talk to the model).
    Every field of a record goes through it on its way into a prompt."""
    return _OUR_TAGS.sub(lambda m: "&lt;" + m.group(1) + m.group(2), text or "")


def _cut_middle(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    keep = max(limit - 60, 20)
    head, tail = text[: keep * 2 // 3], text[-(keep // 3) :]
    return f"{head}\n[… {len(text) - len(head) - len(tail)} characters cut …]\n{tail}"


def _one_line(value: object) -> str:
    """A label field on one line: line breaks in it could forge a step of their own."""
    return " ".join(str(value).split())


def _render_step(step: dict, per_step: int) -> str:
    kind = _one_line(step.get("kind", "step"))
    name = _one_line(step.get("name") or "")
    label = kind + (f" {name}" if name else "") + (" [ERROR]" if step.get("is_error") else "")
    content = str(step.get("content") or "")
    if step.get("arguments"):
        content = f"{content}\narguments: {step['arguments']}".strip()
    index = neutralize(_one_line(step.get("index", "?")))
    return f"[step {index}] {neutralize(label)}:\n{neutralize(_cut_middle(content, per_step))}"


def render_steps(steps: list[dict], budget: int) -> str:
    """The steps as text within ``budget`` characters. When they do not fit,
    the start, the end, the error steps and the refinement notes are kept first
    and every gap is marked, so the reader knows something was cut."""
    per_step = max(400, budget // 6)
    lines = [_render_step(s, per_step) for s in steps]
    if sum(len(line) + 1 for line in lines) <= budget:
        return "\n".join(lines)
    n = len(lines)
    order = [0, 1, n - 1, n - 2, n - 3]
    order += [i for i, s in enumerate(steps) if s.get("is_error")]
    order += [i for i, s in enumerate(steps) if s.get("kind") == "refinement"]
    head, tail = 2, n - 4
    while head <= tail:  # then alternate from both ends towards the middle
        order += [head, tail]
        head, tail = head + 1, tail - 1
    kept: set[int] = set()
    used = 0
    for i in order:
        if 0 <= i < n and i not in kept and used + len(lines[i]) + 1 <= budget:
            kept.add(i)
            used += len(lines[i]) + 1
    out, gap = [], 0
    for i in range(n):
        if i in kept:
            if gap:
                out.append(f"[… {counted(gap, 'step')} omitted to fit the prompt budget …]")
                gap = 0
            out.append(lines[i])
        else:
            gap += 1
    if gap:
        out.append(f"[… {counted(gap, 'step')} omitted to fit the prompt budget …]")
    return "\n".join(out)


def render_trajectory(
    trajectory: Trajectory, *, budget: int | None = None, tag: str = "trajectory", attrs: str = ""
) -> str:
    """``<trajectory>`` block of the task, steps and final answer, neutralized
    and cut to ``budget`` characters (settings.RB_PROMPT_CHAR_BUDGET)."""
    budget = budget or settings.RB_PROMPT_CHAR_BUDGET
    task = neutralize(_cut_middle(trajectory.task, max(500, budget // 6)))
    final = neutralize(_cut_middle(trajectory.final_answer or "(none given)", max(500, budget // 6)))
    steps_budget = max(1000, budget - len(task) - len(final) - 200)
    steps = render_steps(list(trajectory.steps or []), steps_budget) or "(no steps recorded)"
    return (
        f"<{tag}{attrs}>\n<task>\n{task}\n</task>\n<steps>\n{steps}\n</steps>\n"
        f"<final_answer>\n{final}\n</final_answer>\n</{tag}>"
    )


def excerpt(text: str) -> str:
    """The start of an LLM answer, to show a human why it was not usable."""
    text = (text or "").strip()
    return text if len(text) <= EXCERPT_CHARS else text[:EXCERPT_CHARS] + " …"


def render_group(members: list[Trajectory]) -> str:
    """``<rollouts>`` block of a MaTTS group's members, each a ``<rollout n=… verdict=…>``
    with an equal share of settings.RB_PROMPT_CHAR_BUDGET."""
    budget = settings.RB_PROMPT_CHAR_BUDGET
    per = max(2000, budget // max(1, len(members)))
    blocks = [
        render_trajectory(m, budget=per, tag="rollout", attrs=f' n="{n}" verdict="{neutralize(m.verdict)}"')
        for n, m in enumerate(members, start=1)
    ]
    return "<rollouts>\n" + "\n".join(blocks) + "\n</rollouts>"
