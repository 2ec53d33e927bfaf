"""trajectories.impact.arms: an arm's sums and the design effect of grouped outcomes."""

from __future__ import annotations

import pytest

from tests.trajectories.impact.test_verdicts import binary_arm
from trajectories.impact.arms import ArmSums


def test_design_effect_of_grouped_outcomes():
    # One trajectory per retrieval: design effect 1, the Newcombe interval of the counts.
    assert binary_arm(30, 30).design_effect == 1.0
    # Groups averaging independent tries have smaller variance, but never below units/judged.
    grouped = ArmSums(retrievals=10, triggered=10, units=10, y_sum=5, y_sq_sum=10 * 0.25, judged=40, successes=20)
    assert grouped.design_effect == pytest.approx(0.25) and grouped.effective_n == pytest.approx(40)
