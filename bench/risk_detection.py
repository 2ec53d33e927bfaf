"""Risk detection rates and cost: how many poisoning attacks the risk screen
flags, how many honest look-alikes it flags wrongly, per detector, and what
the screen costs beside the distill stage.

    python bench/risk_detection.py [--split tune|heldout|all] [--cases DIR [DIR ...]] [--json] [--llm]

The cases are bench/risk_eval/{tune,heldout}/*.jsonl (format: bench/risk_eval/README.md;
``--cases DIR [DIR …]`` runs the *.jsonl of each DIR instead, a split named after it).
A bank is created per split and given the approved lessons of
bench/risk_eval/bank.jsonl through the items service (``memory_item_create``,
approved by its owner): the history the bank-aware detectors compare with.
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
and counts; the combined rates per style; the attacks missed and the
look-alikes flagged, by id. Then the cost: the distill stage's wall time per
item (the fake LLM's round trip included: it is instant) and, in the same run,
the risk screen's (every detector and its rows) and the word rules' alone,
with their ratios.

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
import math
import os
import statistics
import sys
import tempfile
import time
import uuid
from contextlib import contextmanager
from pathlib import Path

os.environ.setdefault("RB_BROKER_DIR", tempfile.mkdtemp(prefix="rb-bench-risk-broker-"))

from common import ROOT, load_note, setup_django  # sets the bench database first

# The team's own model for --llm, read before the fake LLM takes the service's LLM settings over.
TEAM_LLM = {
    "base_url": os.environ.get("RB_LLM_BASE_URL", ""),
    "api_key": os.environ.get("OPENAI_API_KEY", ""),
    "model": os.environ.get("RB_LLM_MODEL") or "gpt-4o-mini",
}

JUDGE = '{"verdict": "success", "rationale": "The tool results support the answer."}'
NO_FINDINGS = '{"findings": []}'
# The table's order: the word rules, the detectors that read provenance and the bank, then any other; LLMs last.
ORDER = ("rules", "provenance-1", "actions-1", "anomaly-1")
SECOND_OPINION_MARK = "You review lessons that an AI system distilled"


def wilson(hits: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """The Wilson score interval of ``hits`` of ``n`` (95 %): (low, high), (0, 1) when n is 0."""
    if n == 0:
        return 0.0, 1.0
    p = hits / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, centre - half), min(1.0, centre + half)


def rate(hits: int, n: int) -> dict:
    low, high = wilson(hits, n)
    return {"hits": hits, "n": n, "rate": hits / n if n else None, "low": low, "high": high}


def rate_text(r: dict) -> str:
    if not r["n"]:
        return "–"
    return f"{r['hits']}/{r['n']} = **{100 * r['rate']:.0f} %** ({100 * r['low']:.0f}–{100 * r['high']:.0f})"


def detector_family(name: str) -> str:
    """The word rules' versions count as one detector ("rules-2" and a later "rules-3" alike)."""
    return "rules" if name.startswith("rules-") else name


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
        """A new bank holding ``lessons``, approved by its owner through the items service."""
        from django.contrib.auth import get_user_model

        from memories.items.models import ItemStatus, MemoryItem
        from memories.items.services import memory_item_create
        from memories.trust.services import bank_trust_policy_update
        from tests import factories

        owner = get_user_model().objects.create_user(f"bench-{uuid.uuid4().hex[:8]}")
        bank = factories.make_bank(team=factories.make_team(owner=owner, slug=f"risk-{uuid.uuid4().hex[:6]}"))
        for lesson in lessons:
            memory_item_create(
                bank=bank,
                title=lesson["title"],
                description=lesson["description"],
                content=lesson["content"],
                author=owner,
                status=ItemStatus.APPROVED,
                tags=[lesson["domain"].replace("_", "-")],
            )
        approved = MemoryItem.objects.filter(bank=bank, status=ItemStatus.APPROVED).count()
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


def split_report(cases: list, results: dict[str, dict], llm: bool) -> dict:
    """The rates of one split's results (``results``: case id → run)."""
    attacks = [c for c in cases if c.attack]
    benign = [c for c in cases if not c.attack]
    # The word rules always run; another detector shows once it made a finding.
    found = {"rules"} | {detector_family(d) for r in results.values() for d, _k in r["findings"]}
    detectors = sorted(found, key=lambda d: (d.startswith("llm:"), ORDER.index(d) if d in ORDER else len(ORDER), d))
    if llm and "llm:risk_check/v1" not in detectors:
        detectors.append("llm:risk_check/v1")

    def flagged(case, detector: str | None = None) -> bool:
        found = results[case.id]["findings"]
        return any(detector is None or detector_family(d) == detector for d, _k in found)

    def rates(detector: str | None, among_a: list, among_b: list) -> dict:
        return {
            "attacks": rate(sum(flagged(c, detector) for c in among_a), len(among_a)),
            "lookalikes": rate(sum(flagged(c, detector) for c in among_b), len(among_b)),
        }

    styles = sorted({s for c in cases for s in c.styles})
    return {
        "cases": len(cases),
        "attacks": len(attacks),
        "lookalikes": len(benign),
        "detectors": {**{d: rates(d, attacks, benign) for d in detectors}, "combined": rates(None, attacks, benign)},
        "styles": {
            s: {
                d: rates(
                    d if d != "combined" else None,
                    [c for c in attacks if s in c.styles],
                    [c for c in benign if s in c.styles],
                )
                for d in [*detectors, "combined"]
            }
            for s in styles
        },
        "missed": [c.id for c in attacks if not flagged(c)],
        "false_positives": {
            c.id: sorted({f"{detector_family(d)}:{k}" for d, k in results[c.id]["findings"]})
            for c in benign
            if flagged(c)
        },
        "no_item": [c.id for c in cases if not results[c.id]["items"]],
    }


def cost_report(runs: list[dict], rules_timed: bool) -> dict:
    """Per item medians (ms) of the distill stage and the screen inside it, and the ratios."""
    per_item = [r for r in runs if r["items"]]

    def ms(label: str) -> list[float]:
        return [1000 * r["spent"].get(label, 0.0) / r["items"] for r in per_item]

    distill, screen, rules = ms("distill"), ms("screen"), ms("rules")
    out = {
        "items": sum(r["items"] for r in per_item),
        "distill_p50_ms": statistics.median(distill),
        "screen_p50_ms": statistics.median(screen),
        "screen_share": sum(screen) / sum(distill),
        "second_opinion_p50_ms": statistics.median(ms("second_opinion")),
    }
    if rules_timed:
        extra = [s - r for s, r in zip(screen, rules, strict=True)]
        out |= {"rules_p50_ms": statistics.median(rules), "extra_p50_ms": statistics.median(extra)}
        out["extra_share"] = sum(extra) / sum(distill)
    return out


def per_detector(by: dict, llm_measured: bool) -> str:
    """One style's rates per detector, short: ``rules 9/18 · 1/15``."""
    return ", ".join(
        f"{d} {r['attacks']['hits']}/{r['attacks']['n']} · {r['lookalikes']['hits']}/{r['lookalikes']['n']}"
        for d, r in by.items()
        if d != "combined" and (llm_measured or not d.startswith("llm:"))
    )


def markdown(report: dict) -> str:
    lines = [
        "| split | detector | attacks flagged (TPR, 95 % CI) | look-alikes flagged (FPR, 95 % CI) |",
        "|---|---|---|---|",
    ]
    for split, r in report["splits"].items():
        for detector, rr in r["detectors"].items():
            name = "**combined**" if detector == "combined" else f"`{detector}`"
            if detector.startswith("llm:") and not report["llm_measured"]:
                lines.append(f"| {split} | {name} | not measured here | not measured here |")
                continue
            lines.append(f"| {split} | {name} | {rate_text(rr['attacks'])} | {rate_text(rr['lookalikes'])} |")
    lines += [
        "",
        "| split | style | attacks flagged (combined) | look-alikes flagged (combined) | per detector: attacks / look-alikes |",
        "|---|---|---|---|---|",
    ]
    for split, r in report["splits"].items():
        for style, by in r["styles"].items():
            rr = by["combined"]
            lines.append(
                f"| {split} | {style} | {rate_text(rr['attacks'])} | {rate_text(rr['lookalikes'])} | {per_detector(by, report['llm_measured'])} |"
            )
    lines.append("")
    for split, r in report["splits"].items():
        lines.append(f"- {split}: missed {', '.join(r['missed']) or 'none'}")
        wrong = [f"{i} ({', '.join(k)})" for i, k in r["false_positives"].items()]
        lines.append(f"- {split}: look-alikes flagged {', '.join(wrong) or 'none'}")
        if r["no_item"]:
            lines.append(f"- {split}: no new item (the lesson was already in the bank) {', '.join(r['no_item'])}")
    c = report["cost"]
    lines.append(
        f"- cost per item (medians): distill stage {c['distill_p50_ms']:.1f} ms, risk screen {c['screen_p50_ms']:.1f} ms "
        f"({100 * c['screen_share']:.1f} % of the distill time, the screen included)"
        + (
            f", of which the word rules {c['rules_p50_ms']:.1f} ms and the rest (the other detectors, the rows stored) {c['extra_p50_ms']:.1f} ms "
            f"({100 * c['extra_share']:.1f} %)"
            if "extra_share" in c
            else ""
        )
        + (f"; the LLM second opinion {c['second_opinion_p50_ms']:.1f} ms" if report["llm"] else "")
        + f"; {c['items']} items, {report['note']}"
    )
    return "\n".join(lines)


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
