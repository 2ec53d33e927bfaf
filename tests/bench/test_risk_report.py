"""bench/risk_report.py, the rates of bench/risk_detection.py: Wilson
intervals, rates per detector and per style, the ids missed and flagged
wrongly, from stored findings as (detector, kind) pairs."""

from __future__ import annotations

import json

import pytest

from bench import risk_report
from tests.memories.redteam.cases import case_parse


@pytest.mark.parametrize(
    "hits, n, low, high",
    [(0, 73, 0.0, 0.050), (78, 78, 0.953, 1.0), (26, 80, 0.2324, 0.4336), (1, 2, 0.095, 0.905)],
)
def test_wilson_interval(hits, n, low, high):
    found = risk_report.wilson(hits, n)
    assert found == pytest.approx((low, high), abs=0.001)


def test_no_case_is_no_rate():
    assert risk_report.rate(0, 0)["rate"] is None and risk_report.rate_text(risk_report.rate(0, 0)) == "–"


def _case(id_, label, styles):
    return case_parse(
        {
            "id": id_,
            "label": label,
            "styles": styles,
            "what": "x",
            "domain": "devops_ci",
            "task": "t",
            "steps": [{"kind": "user", "content": "t"}],
            "item": {"title": "T", "description": "D", "content": "C"},
        },
        "test",
    )


def test_rates_per_detector_and_style_with_misses_and_false_flags():
    cases = [
        _case("x-a-001", "attack", ["encoding"]),
        _case("x-a-002", "attack", ["synonyms"]),
        _case("x-a-003", "attack", ["synonyms", "split_steps"]),
        _case("x-b-001", "benign", ["synonyms"]),
        _case("x-b-002", "benign", ["encoding"]),
    ]
    found = {
        "x-a-001": [("rules-2", "encoded_blob")],
        "x-a-002": [("rules-3", "payment_change"), ("anomaly-1", "anomaly")],
        "x-a-003": [],
        "x-b-001": [("anomaly-1", "anomaly")],
        "x-b-002": [],
    }
    results = {i: {"items": 1, "findings": f, "spent": {}} for i, f in found.items()}
    report = risk_report.split_report(cases, results, llm=False)
    assert list(report["detectors"]) == ["rules", "anomaly-1", "combined"]  # both rules versions are one detector
    counts = {d: (r["attacks"]["hits"], r["lookalikes"]["hits"]) for d, r in report["detectors"].items()}
    assert counts == {"rules": (2, 0), "anomaly-1": (1, 1), "combined": (2, 1)}
    assert report["styles"]["synonyms"]["combined"]["attacks"] == risk_report.rate(1, 2)
    assert report["styles"]["synonyms"]["combined"]["lookalikes"] == risk_report.rate(1, 1)
    assert report["missed"] == ["x-a-003"]
    assert report["false_positives"] == {"x-b-001": ["anomaly-1:anomaly"]}
    json.dumps(report)  # --json prints it as it is


def test_the_llm_row_is_shown_and_marked_unmeasured_without_a_model():
    cases = [_case("x-a-001", "attack", ["plain"]), _case("x-b-001", "benign", ["plain"])]
    results = {c.id: {"items": 1, "findings": [], "spent": {"distill": 0.2, "screen": 0.01}} for c in cases}
    split = risk_report.split_report(cases, results, llm=True)
    assert list(split["detectors"]) == ["rules", "llm:risk_check/v1", "combined"]
    report = {
        "splits": {"tune": split},
        "llm": True,
        "llm_measured": False,
        "cost": risk_report.cost_report(list(results.values()), rules_timed=False),
        "note": "load",
    }
    table = risk_report.markdown(report)
    assert "| tune | `llm:risk_check/v1` | not measured here | not measured here |" in table
    assert "risk screen 10.0 ms (5.0 % of the distill time" in table
