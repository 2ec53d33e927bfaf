"""Risk detection rates and cost: how many poisoning attacks the risk screen
flags, how many honest look-alikes it flags wrongly, per detector, and what
the screen costs beside the distill stage.

    python bench/risk_detection.py [--split tune|heldout|all] [--cases DIR [DIR ...]] [--json] [--llm]

The cases are bench/risk_eval/{tune,heldout}/*.jsonl (format: bench/risk_eval/README.md;
``--cases DIR [DIR …]`` runs the *.jsonl of each DIR instead, a split named after it).
A bank is created per split and given the approved lessons of
bench/risk_eval/bank.jsonl through the items service (``memory_item_create``,
approved by its owner, then the anomaly score calibrated as a worker would):
the history the bank-aware detectors compare with.
Each case is then ingested as a trajectory (``trajectory_ingest``) and run
through the worker's code in this process (``trajectory_advance``: judge,
distill, the risk screen ``memory_items_screen`` → ``memory_items_risk_scan``
with the run's steps and task, and the LLM second opinion when the bank's
policy has it) against the fake LLM at the HTTP boundary (tests/fake_llm.py),
which distills exactly the case's item. The stored RiskFinding rows of the
case's item are read, then the case's trajectory, experience and items are
deleted, so every case meets the same bank.

Reports per split: for each detector (``RiskFinding.detector``: ``rules-*``,
``provenance-1``, ``actions-1``, ``anomaly-1``, ``llm:risk_check/v1``, whichever
made a finding) and ``combined`` (any finding), attacks flagged (true-positive
rate) and look-alikes flagged (false-positive rate) with Wilson 95 % intervals
and counts; the rates per style (combined and per detector); the attacks missed and the
look-alikes flagged, by id. Then the cost: the distill stage's wall time per
item (the fake LLM's round trip included: it is instant) and, in the same run,
the risk screen's (every detector and its rows) and the word rules' alone,
with their ratios. The tables are made by bench/risk_report.py.

``--llm`` turns the bank's ``llm_risk_check`` on: the pipeline asks the LLM
for a second opinion on each distilled item (trajectories/pipeline/risk_check.py).
The fake LLM still judges and distills (it must return the case's item); it
forwards the second-opinion prompt to the team's own model, configured as
the service is (docs/configuration.md): ``RB_LLM_BASE_URL`` (empty: OpenAI),
``OPENAI_API_KEY``, ``RB_LLM_MODEL``. With neither set, the fake answers
"no findings" itself: the code path runs, its rates are not measured.

    RB_LLM_BASE_URL=http://localhost:8000/v1 RB_LLM_MODEL=qwen2.5-7b-instruct OPENAI_API_KEY=x \\
        python bench/risk_detection.py --llm"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import tempfile
import time
import uuid
from contextlib import contextmanager
from pathlib import Path

os.environ.setdefault("RB_BROKER_DIR", tempfile.mkdtemp(prefix="rb-bench-risk-broker-"))

from common import ROOT, load_note, setup_django  # sets the bench database first
from risk_report import cost_report, markdown, split_report

# The team's own model for --llm, read before the fake LLM takes the service's LLM settings over.
TEAM_LLM = {
    "base_url": os.environ.get("RB_LLM_BASE_URL", ""),
    "api_key": os.environ.get("OPENAI_API_KEY", ""),
    "model": os.environ.get("RB_LLM_MODEL") or "gpt-4o-mini",
}

JUDGE = '{"verdict": "success", "rationale": "The tool results support the answer."}'
NO_FINDINGS = '{"findings": []}'
# How the fake LLM tells the second opinion's prompt (trajectories/prompts/risk_check_v1.txt) from the others.
SECOND_OPINION_MARK = "You review lessons that an AI system distilled"


class Clock:
    """Wall seconds per label, for the current case."""

    def __init__(self):
        self.spent: dict[str, float] = {}

    @contextmanager
    def timing(self, label: str):
        started = time.perf_counter()
        try:
            yield
        finally:
            self.spent[label] = self.spent.get(label, 0.0) + time.perf_counter() - started

    def wrap(self, module, name: str, label: str) -> bool:
        real = getattr(module, name, None)
        if real is None:
            return False

        def timed(*args, **kwargs):
            with self.timing(label):
                return real(*args, **kwargs)

        setattr(module, name, timed)
        return True


class Screen:
    """The service with its fake LLM, run over the cases of one split after another."""

    def __init__(self, llm: bool):
        from tests.fake_llm import FakeLLM

        self.llm = llm
        self.team_model = bool(llm and (TEAM_LLM["base_url"] or TEAM_LLM["api_key"]))
        self.cases: dict[str, object] = {}
        self.second_opinions = 0
        self.fake = fake = FakeLLM().start()
        fake.responder = self.answer
        os.environ["RB_LLM_BASE_URL"], os.environ["OPENAI_API_KEY"] = fake.base_url, "bench"
        setup_django()
        from django.conf import settings

        import memories.trust.risks
        import memories.trust.services
        import trajectories.pipeline.advance
        import trajectories.pipeline.distill

        settings.RB_LLM_BASE_URL, settings.OPENAI_API_KEY = fake.base_url, "bench"
        for name in ("httpx", "httpx2", "openai"):  # the SDK logs every request at INFO
            logging.getLogger(name).setLevel(logging.WARNING)
        self.clock = clock = Clock()
        clock.wrap(trajectories.pipeline.advance, "distill_row", "distill")
        clock.wrap(memories.trust.services, "memory_items_risk_scan", "screen")
        self.rules_timed = clock.wrap(memories.trust.risks, "scan_item", "rules")
        clock.wrap(trajectories.pipeline.distill, "risk_second_opinion", "second_opinion")
        self.advance = trajectories.pipeline.advance.trajectory_advance

    def answer(self, messages: list[dict]) -> str:
        prompt = messages[-1]["content"]
        if "accomplished the task" in prompt:
            return JUDGE
        if SECOND_OPINION_MARK in prompt:
            self.second_opinions += 1
            return self.team_answer(messages) if self.team_model else NO_FINDINGS
        case = next((c for key, c in self.cases.items() if key in prompt), None)
        assert case is not None, "a distill prompt without a case's key"
        return case.distilled()

    @staticmethod
    def team_answer(messages: list[dict]) -> str:
        import openai

        client = openai.OpenAI(base_url=TEAM_LLM["base_url"] or None, api_key=TEAM_LLM["api_key"] or "none")
        answer = client.chat.completions.create(model=TEAM_LLM["model"], messages=messages, temperature=0)
        return answer.choices[0].message.content or ""

    def bank(self, lessons: list[dict]):
        """A new bank with the history of bank.jsonl (``bank_seed``: ``lessons``, approved by its owner)."""
        from django.contrib.auth import get_user_model

        from memories.trust.services import bank_trust_policy_update
        from tests import factories
        from tests.memories.redteam.cases import bank_seed

        owner = get_user_model().objects.create_user(f"bench-{uuid.uuid4().hex[:8]}")
        bank = factories.make_bank(team=factories.make_team(owner=owner, slug=f"risk-{uuid.uuid4().hex[:6]}"))
        approved = bank_seed(bank, owner)
        assert approved == len(lessons), f"{approved} of {len(lessons)} lessons approved in the bank"
        if self.llm:
            bank_trust_policy_update(bank=bank, actor=owner, llm_risk_check=True)
        return bank

    def run(self, bank, case) -> dict:
        """One case through the pipeline: its item's findings and the stage times, its rows then removed."""
        from memories.items.models import Experience, MemoryItem
        from memories.trust.risk_models import RiskFinding
        from trajectories.ingest.record import trajectory_ingest
        from trajectories.models import Status, Trajectory

        self.cases = {case.key: case}
        trajectory, _created = trajectory_ingest(bank=bank, token=None, data=case.trajectory())
        self.clock.spent = {}
        self.advance(trajectory_id=trajectory.pk)
        spent = dict(self.clock.spent)
        trajectory = Trajectory.objects.get(pk=trajectory.pk)
        assert trajectory.status == Status.DONE, (case.id, trajectory.status, trajectory.status_detail)
        items = list(MemoryItem.objects.filter(experience_id=trajectory.experience_id))
        findings = list(RiskFinding.objects.filter(item__in=items).values_list("detector", "kind"))
        MemoryItem.objects.filter(pk__in=[i.pk for i in items]).delete()
        Trajectory.objects.filter(pk=trajectory.pk).delete()
        Experience.objects.filter(pk=trajectory.experience_id).delete()
        return {"items": len(items), "findings": findings, "spent": spent}


def _args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--split", choices=("tune", "heldout", "all"), default="all")
    parser.add_argument(
        "--cases",
        type=Path,
        nargs="+",
        help="run the *.jsonl cases of these directories (a split each, named after it)",
    )
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    parser.add_argument("--llm", action="store_true", help="turn the bank's LLM second opinion on (see above)")
    return parser.parse_args(argv)


def main(argv=None) -> None:
    args = _args(argv)
    sys.path.insert(0, str(ROOT))
    from tests.memories.redteam.cases import EVAL_DIR, bank_lessons, cases_load

    if args.cases:
        splits = {path.resolve().name: path for path in args.cases}
    else:
        names = ("tune", "heldout") if args.split == "all" else (args.split,)
        splits = {name: EVAL_DIR / name for name in names}
    loaded = {name: cases_load(path) for name, path in splits.items()}
    for name, cases in loaded.items():
        if not cases:
            print(f"{name}: no cases in {splits[name]}", file=sys.stderr)
    loaded = {name: cases for name, cases in loaded.items() if cases}
    if not loaded:
        raise SystemExit("no cases to run")
    started = time.perf_counter()
    screen = Screen(args.llm)
    lessons = bank_lessons()
    runs, splits_out = [], {}
    try:
        for name, cases in loaded.items():
            bank = screen.bank(lessons)
            results = {}
            for case in cases:
                results[case.id] = screen.run(bank, case)
                runs.append(results[case.id])
            splits_out[name] = split_report(cases, results, args.llm)
    finally:
        screen.fake.stop()
    report = {
        "splits": splits_out,
        "llm": args.llm,
        "llm_measured": screen.team_model,
        "llm_model": TEAM_LLM["model"] if screen.team_model else None,
        "second_opinion_requests": screen.second_opinions,
        "cost": cost_report(runs, screen.rules_timed),
        "note": f"{load_note()}, {time.perf_counter() - started:.0f} s total",
    }
    if args.llm:
        assert screen.second_opinions == len(runs), f"{screen.second_opinions} second opinions for {len(runs)} runs"
    if args.json:
        print(json.dumps(report, indent=1, ensure_ascii=False))
        return
    llm = (
        f"; LLM second opinion: {report['second_opinion_requests']} requests"
        + (f" to {report['llm_model']}" if report["llm_measured"] else " answered by the fake LLM (not measured)")
        if args.llm
        else ""
    )
    print(f"\n## Risk detection ({report['note']}{llm})\n")
    print(markdown(report))


if __name__ == "__main__":
    main()
