"""The home page's counts of trajectories waiting for a person in each bank
(accounts.teams.bank_work): those the agent and the verdict disagree on, those
waiting for an LLM endpoint (a person can judge them meanwhile) and those that
need attention. One query for any number of banks, reading only those rows."""

from __future__ import annotations

from django.db.models import Count, Q
from django.urls import reverse

from accounts.models import Bank
from accounts.teams.bank_work import BankWork
from memories.review.selectors import agent_judge_disagree
from reasoningbank_site.text import counted
from trajectories.models import Status, Trajectory


def trajectory_work(banks: list[Bank], user) -> dict[int, list[BankWork]]:
    """Per bank: disagreements to settle, trajectories to judge and trajectories needing attention."""
    rows = {
        row["bank"]: row
        for row in Trajectory.objects.filter(bank__in=[bank.pk for bank in banks])
        # Only the rows that count: the disagreeing ones (partial index trajectory_disagree) and those parked
        # or needing attention (bank, status), never a bank's every trajectory.
        .filter(agent_judge_disagree() | Q(status__in=[Status.AWAITING_LLM, Status.NEEDS_ATTENTION]))
        .values("bank")
        .annotate(
            disagree=Count("id", filter=agent_judge_disagree()),
            to_judge=Count("id", filter=Q(status=Status.AWAITING_LLM, verdict="")),
            attention=Count("id", filter=Q(status=Status.NEEDS_ATTENTION)),
        )
    }
    work = {}
    for bank in banks:
        row = rows.get(bank.pk, {})
        b = {"bank_id": bank.public_id}
        trajectories = reverse("trajectories:list", kwargs=b)
        n = row.get("disagree", 0), row.get("to_judge", 0), row.get("attention", 0)
        work[bank.pk] = [
            BankWork(
                priority=5,
                count=n[0],
                text=f"{counted(n[0], 'trajectory', 'trajectories')} where the agent and the judge disagree",
                action="Review them first",
                url=f"{trajectories}?disagree=on",  # the trajectory list's filter, where the dashboard's count leads
            ),
            BankWork(
                priority=20,
                count=n[1],
                text=f"{counted(n[1], 'trajectory', 'trajectories')} to judge (no LLM has judged them)",
                action="Judge them",
                url=f"{trajectories}?status={Status.AWAITING_LLM}",
            ),
            BankWork(
                priority=30,
                count=n[2],
                text=f"{counted(n[2], 'trajectory', 'trajectories')} needing attention",
                action="See why",
                url=f"{trajectories}?status={Status.NEEDS_ATTENTION}",
            ),
        ]
    return work
