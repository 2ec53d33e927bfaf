"""A task's check on a try's final answer: contains, equals, regex (with its time guard)."""

from __future__ import annotations

import threading

import pytest

from trajectories.evaluation.checks import check_passes


@pytest.mark.parametrize(
    ("check", "answer", "passed"),
    [
        (None, "anything", None),
        ({"type": "contains", "value": "12:00"}, "Sundays 12:00-17:00.", True),
        ({"type": "contains", "value": "sunday"}, "Sundays 12:00-17:00.", False),
        ({"type": "contains", "value": "sunday", "ignore_case": True}, "Sundays 12:00-17:00.", True),
        ({"type": "equals", "value": "42"}, "  42\n", True),
        ({"type": "equals", "value": "42"}, "42 apples", False),
        ({"type": "equals", "value": "ÉTÉ", "ignore_case": True}, "été", True),
        ({"type": "regex", "value": r"^\d{4}-\d{2}-\d{2}$"}, "2026-05-03", True),
        ({"type": "regex", "value": r"order #\d+"}, "It is ORDER #1042.", False),
        ({"type": "regex", "value": r"order #\d+", "ignore_case": True}, "It is ORDER #1042.", True),
        ({"type": "regex", "value": "(unclosed"}, "(unclosed", False),  # a broken pattern never passes
        ({"type": "startswith", "value": "a"}, "abc", False),
        ({"type": "contains", "value": 3}, "3", False),
        ({"type": "contains", "value": "x"}, None, False),
    ],
)
def test_check_passes(check, answer, passed):
    assert check_passes(check, answer) is passed


def test_a_pattern_that_backtracks_for_ever_fails_instead_of_hanging():
    # Without the guard this search runs for ages (exponential backtracking); with it the check fails.
    results = []
    worker = threading.Thread(
        target=lambda: results.append(check_passes({"type": "regex", "value": r"(a|aa)+$"}, "a" * 5000 + "!")),
        daemon=True,
    )
    worker.start()
    worker.join(timeout=60)
    assert results == [False]
