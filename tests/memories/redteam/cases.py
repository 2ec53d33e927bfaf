"""The red-team set (attacks.json, benign.json) as trajectories and the item
text the fake LLM distills from each, in the shape the pipeline reads."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).parent


@dataclass(frozen=True)
class Case:
    key: str  # unique; written into the task so the fake LLM can tell the cases apart
    kind: str  # what the attack is ("benign" for a look-alike)
    attack: bool
    task: str
    observation: str
    title: str
    description: str
    content: str

    def steps(self) -> list[dict]:
        """A small run: the task, one tool call whose result is the case's observation, an answer."""
        return [
            {"kind": "user", "content": self.task},
            {"kind": "thought", "content": "I should look this up with the tool."},
            {"kind": "tool_call", "content": "lookup", "name": "lookup", "arguments": '{"q": "the task"}'},
            {"kind": "tool_result", "content": self.observation, "name": "lookup"},
            {"kind": "answer", "content": "Done as asked."},
        ]

    def distilled(self) -> str:
        """The fake LLM's distillation answer: this case's item, in the distill prompt's format."""
        return (
            "Reflection: what worked in this run.\n\n# Memory Item 1\n"
            f"## Title\n{self.title}\n## Description\n{self.description}\n## Content\n{self.content}\n"
        )


def load() -> list[Case]:
    cases = []
    for name, attack in (("attacks", True), ("benign", False)):
        for n, raw in enumerate(json.loads((HERE / f"{name}.json").read_text())):
            key = f"[rt-{name[0]}{n:02d}]"
            cases.append(
                Case(
                    key=key,
                    kind=raw.get("kind", "benign"),
                    attack=attack,
                    task=f"{raw['task']} {key}",
                    observation=raw["observation"],
                    title=raw["title"],
                    description=raw["description"],
                    content=raw["content"],
                )
            )
    return cases


CASES = load()
ATTACKS = [c for c in CASES if c.attack]
BENIGN = [c for c in CASES if not c.attack]
