"""What a reviewer needs beside an item to decide on it: the source
trajectory's verdict, which kind of judgment set it, the judge's rationale,
the outcome the agent claimed, and whether the two disagree."""

from __future__ import annotations

from dataclasses import dataclass, field

from trajectories.judging.experiments import experiment_cases
from trajectories.judging.few_shot import HOLDOUT_PERCENT
from trajectories.models import Judgment, JudgmentSource, Trajectory
from trajectories.records.selectors import trajectory_list

# The order in which a kind of judgment sets the verdict (trajectories.judging.verdicts).
VERDICT_PRECEDENCE = (JudgmentSource.HUMAN, JudgmentSource.AGENT, JudgmentSource.LLM)


@dataclass
class Evidence:
    trajectory: Trajectory
    judgments: list[Judgment]
    verdict_by: Judgment | None  # the judgment the verdict comes from
    judge: Judgment | None  # the latest LLM judgment (its rationale)
    humans: list[Judgment] = field(default_factory=list)

    @property
    def claimed(self) -> str:
        return self.trajectory.outcome

    @property
    def disagrees(self) -> bool:
        """The agent reported one outcome and the verdict says the other."""
        t = self.trajectory
        return bool(t.outcome and t.verdict and t.outcome != t.verdict)

    @property
    def judge_label(self) -> str:
        return self.judge.label if self.judge else ""


def trajectory_evidence(*, trajectory: Trajectory) -> Evidence:
    """The evidence about ``trajectory``'s verdict, from its judgments (one query)."""
    judgments = list(trajectory.judgments.select_related("author").order_by("created_at", "id"))
    verdict_by = None
    for source in VERDICT_PRECEDENCE:
        of_source = [j for j in judgments if j.source == source]
        if of_source:
            verdict_by = of_source[-1]
            break
    llm = [j for j in judgments if j.source == JudgmentSource.LLM]
    humans = [j for j in judgments if j.source == JudgmentSource.HUMAN]
    return Evidence(
        trajectory=trajectory,
        judgments=judgments,
        verdict_by=verdict_by,
        judge=llm[-1] if llm else None,
        humans=humans,
    )


def disagreement_count(*, bank) -> int:
    """How many of ``bank``'s trajectories the agent reported as one outcome and the verdict calls the other:
    the rows of the trajectory list's ``disagree`` filter, which the dashboard links to."""
    return trajectory_list(bank=bank, disagree=True).count()


# Below about 30 held-out cases a judge's accuracy has a 95% interval wider than ±15 points, so an experiment
# rarely tells two judges apart; it runs from the first held-out case.
EXPERIMENT_CASES_WANTED = 30


@dataclass
class LabelNeeds:
    labelled: int  # trajectories with a human label
    held_out: int  # of them, in the experiments' held-out split
    wanted: int  # held-out cases an experiment needs to tell judges apart
    more_labels: int  # about how many more human labels that takes (only a share of task ids is held out)


def human_label_needs(*, bank) -> LabelNeeds:
    """How many human labels ``bank`` has, how many an experiment can use, and how many more it needs."""
    labelled = Judgment.objects.filter(trajectory__bank=bank, source=JudgmentSource.HUMAN)
    labelled = labelled.values("trajectory_id").distinct().count()
    held_out = len(experiment_cases(bank=bank))
    missing = max(0, EXPERIMENT_CASES_WANTED - held_out)
    return LabelNeeds(labelled, held_out, EXPERIMENT_CASES_WANTED, -(-missing * 100 // HOLDOUT_PERCENT))
