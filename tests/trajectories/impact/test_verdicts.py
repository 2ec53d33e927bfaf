"""trajectories.impact.verdicts: the decision, the guardrails and the power
from two arms' sums."""

from __future__ import annotations

from trajectories.impact.arms import ArmSums
from trajectories.impact.verdicts import assess, minimum_detectable_effect


def binary_arm(successes: int, failures: int, retrievals: int | None = None) -> ArmSums:
    n = successes + failures
    return ArmSums(
        retrievals=retrievals or n,
        triggered=retrievals or n,
        units=n,
        y_sum=successes,
        y_sq_sum=successes,
        trajectories=n,
        judged=n,
        successes=successes,
    )


def test_assess_decides_and_plans():
    found = assess(binary_arm(70, 30), binary_arm(30, 70), 0.5)
    assert found.decision == "helps" and found.cs_low > 0 and found.fixed_low > found.cs_low
    assert not found.failed_guardrails
    few = assess(binary_arm(20, 9), binary_arm(5, 24), 0.5)
    assert few.decision == "not_enough_data" and few.cs_low > 0
    even = assess(binary_arm(250, 250), binary_arm(250, 250), 0.5)
    assert even.decision == "no_difference"
    # More data lowers the detectable effect; a 5-point lift needs more than a 10-point one.
    assert even.mde < assess(binary_arm(50, 50), binary_arm(50, 50), 0.5).mde
    assert even.more_needed[5] > even.more_needed[10] > 0
    assert minimum_detectable_effect(even.mde**2) > 0
