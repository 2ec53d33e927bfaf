"""The risk evaluation cases (bench/risk_eval/: ``tune/*.jsonl``, the red-team
sets the rules were tuned on, and ``heldout/*.jsonl``, written by others and
never tuned on) as trajectories and the item the fake LLM distills from each,
in the shape the pipeline reads. One source for the red-team tests and
bench/risk_detection.py. The format is described in bench/risk_eval/README.md."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

EVAL_DIR = Path(__file__).resolve().parents[3] / "bench" / "risk_eval"
LABELS = ("attack", "benign")
STYLES = ("other_language", "encoding", "markdown", "split_steps", "synonyms", "fake_success", "paraphrase", "plain")
DOMAINS = ("shop_support", "finance_ops", "devops_ci", "cloud_data", "web_research", "it_helpdesk")
STEP_KINDS = ("user", "thought", "tool_call", "tool_result", "answer")


class CaseError(ValueError):
    """A case line that does not follow the format (its file and line are in the message)."""


@dataclass(frozen=True)
class Case:
    id: str
    label: str  # "attack" or "benign" (a look-alike)
    styles: tuple[str, ...]
    what: str
    domain: str
    task: str
    steps_: tuple = field(repr=False)
    final_answer: str
    title: str
    description: str
    content: str

    @property
    def attack(self) -> bool:
        return self.label == "attack"

    @property
    def key(self) -> str:
        """Written into the run's final answer (which the risk screen does not read), so the fake LLM,
        seeing it in the distill prompt, can tell the cases apart."""
        return f"[case {self.id}]"

    @property
    def kind(self) -> str:
        return self.what

    def steps(self) -> list[dict]:
        """The run's steps as an agent sends them (a fresh copy)."""
        return [dict(s) for s in self.steps_]

    def trajectory(self) -> dict:
        """The case as the ingest API takes it."""
        return {"task": self.task, "steps": self.steps(), "final_answer": f"{self.final_answer} {self.key}"}

    def distilled(self) -> str:
        """The fake LLM's distillation answer: this case's item, in the distill prompt's format."""
        return (
            "Reflection: what worked in this run.\n\n# Memory Item 1\n"
            f"## Title\n{self.title}\n## Description\n{self.description}\n## Content\n{self.content}\n"
        )


def _step(raw, where: str) -> dict:
    if not isinstance(raw, dict) or raw.get("kind") not in STEP_KINDS or not isinstance(raw.get("content"), str):
        raise CaseError(f"{where}: a step needs a kind in {STEP_KINDS} and a content string")
    return {k: raw[k] for k in ("kind", "content", "name", "arguments") if raw.get(k) not in (None, "")}


def case_parse(raw, where: str) -> Case:
    """One case from its parsed JSON line; raises CaseError naming ``where`` when it breaks the format."""
    if not isinstance(raw, dict):
        raise CaseError(f"{where}: a case is a JSON object")
    item = raw.get("item")
    styles = raw.get("styles")
    problems = [
        name
        for name, ok in (
            ("id", isinstance(raw.get("id"), str) and raw["id"].strip()),
            ("label", raw.get("label") in LABELS),
            ("styles", isinstance(styles, list) and styles and set(styles) <= set(STYLES)),
            ("domain", raw.get("domain") in DOMAINS),
            ("task", isinstance(raw.get("task"), str) and raw["task"].strip()),
            ("steps", isinstance(raw.get("steps"), list) and raw["steps"]),
            ("item", isinstance(item, dict) and all(isinstance(item.get(k), str) for k in ("title", "content"))),
        )
        if not ok
    ]
    if problems:
        raise CaseError(f"{where}: missing or invalid {', '.join(problems)}")
    return Case(
        id=raw["id"].strip(),
        label=raw["label"],
        styles=tuple(styles),
        what=str(raw.get("what") or ""),
        domain=raw["domain"],
        task=raw["task"],
        steps_=tuple(_step(s, f"{where} step {n}") for n, s in enumerate(raw["steps"])),
        final_answer=str(raw.get("final_answer") or ""),
        title=item["title"],
        description=str(item.get("description") or ""),
        content=item["content"],
    )


def cases_load(directory: Path) -> list[Case]:
    """Every case of ``directory``/*.jsonl, file by file in name order; ids must be unique."""
    cases, seen = [], set()
    for path in sorted(Path(directory).glob("*.jsonl")):
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            if not line.strip():
                continue
            where = f"{path.name}:{n}"
            try:
                raw = json.loads(line)
            except ValueError as exc:
                raise CaseError(f"{where}: not JSON ({exc})") from None
            case = case_parse(raw, where)
            if case.id in seen:
                raise CaseError(f"{where}: the id {case.id} is used twice")
            seen.add(case.id)
            cases.append(case)
    return cases


def bank_lessons(path: Path = EVAL_DIR / "bank.jsonl") -> list[dict]:
    """The approved lessons of an honest team's bank (title, description, content, domain)."""
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def bank_seed(bank, owner) -> int:
    """Give ``bank`` the history of bank.jsonl: each lesson written and approved by ``owner`` through the
    items service, then what a worker computes from a bank's approved items long before a run arrives (the
    anomaly score's calibration, in a checkout that has it). Returns how many lessons are approved."""
    from memories.items.models import ItemStatus, MemoryItem
    from memories.items.services import memory_item_create

    for lesson in bank_lessons():
        memory_item_create(
            bank=bank,
            title=lesson["title"],
            description=lesson["description"],
            content=lesson["content"],
            author=owner,
            status=ItemStatus.APPROVED,
            tags=[lesson["domain"].replace("_", "-")],
        )
    try:
        from memories.trust.anomaly.calibration import bank_anomaly_calibrate
    except ImportError:  # a checkout without the anomaly score
        pass
    else:
        bank_anomaly_calibrate(bank=bank)
    return MemoryItem.objects.filter(bank=bank, status=ItemStatus.APPROVED).count()


# The red-team set of the worker test: the project's own attacks and look-alikes (the tune split's first file).
CASES = [c for c in cases_load(EVAL_DIR / "tune") if c.id.startswith("redteam-")]
ATTACKS = [c for c in CASES if c.attack]
BENIGN = [c for c in CASES if not c.attack]
