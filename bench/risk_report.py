"""The rates and tables of bench/risk_detection.py: Wilson intervals, the
rates of one split per detector and per style, the cost per item, and the
Markdown tables for bench/README.md and docs/security.md."""

from __future__ import annotations

import math
import statistics

# The table's order: the word rules, the detectors that read provenance and the bank, then any other; LLMs last.
ORDER = ("rules", "provenance-1", "actions-1", "anomaly-1")


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
