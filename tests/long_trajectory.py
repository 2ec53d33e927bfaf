"""A long run for the trajectory page tests:
600 steps of thought → tool call → tool result, 15 of them errors, every
7th result a long page dump, the final answer last; and a MaTTS group of
rollouts of one task. Stored through the real ingestion service."""

from __future__ import annotations

from memories.items.experiences import experience_create
from memories.items.models import ItemOrigin
from memories.items.services import memory_item_propose
from tests.factories import make_done_trajectory, make_trajectory
from trajectories.models import Trajectory

FINAL_ANSWER = "The cheapest fare is 412 EUR on flight LH 1234, leaving 07:05 on 3 March."


def long_steps(n: int = 600) -> list[dict]:
    """``n`` normalized steps: a user task, then cycles of thought / tool_call /
    tool_result (three errors in every 120 steps, every 7th result 2,000 characters),
    and an answer as the last step."""
    steps = [{"index": 0, "kind": "user", "content": "Find the cheapest flight from Berlin to Lisbon in March."}]
    while len(steps) < n - 1:
        i = len(steps)
        cycle = (i - 1) % 3
        if cycle == 0:
            steps.append({"index": i, "kind": "thought", "content": f"Step {i}: try the next date in the range."})
        elif cycle == 1:
            steps.append(
                {
                    "index": i,
                    "kind": "tool_call",
                    "content": "",
                    "name": "fare_search",
                    "arguments": f'{{"from": "BER", "to": "LIS", "day": {i % 31 + 1}}}',
                    "call_id": f"c{i}",
                }
            )
        else:
            error = i % 120 in (3, 42, 81)
            body = "HTTP 502 from the fare service" if error else f"{i % 9 + 3} fares, cheapest {400 + i % 97} EUR"
            if not error and i % 7 == 0:
                body += " " + "fare row; " * 200
            step = {"index": i, "kind": "tool_result", "content": body, "name": "fare_search", "call_id": f"c{i - 1}"}
            if error:
                step["is_error"] = True
            steps.append(step)
    steps.append({"index": len(steps), "kind": "answer", "content": FINAL_ANSWER})
    return steps


def error_indexes(steps: list[dict]) -> list[int]:
    return [s["index"] for s in steps if s.get("is_error")]


def make_long_trajectory(bank, n: int = 600, **fields):
    return make_done_trajectory(bank, steps=long_steps(n), final_answer=FINAL_ANSWER, **fields)


def make_group(bank, size: int = 3, *, group_id: str = "matts-run-1", verdicts=("success", "failure", "failure")):
    """``size`` finished rollouts of one task in MaTTS group ``group_id``."""
    return [
        make_trajectory(
            bank,
            task="Find the cheapest flight from Berlin to Lisbon in March.",
            steps=long_steps(12 + 3 * n),
            final_answer=f"Rollout {n}: {400 + n} EUR",
            agent=f"agent-{n}",
            group_id=group_id,
            group_size=size,
            status="done",
            verdict=verdicts[n % len(verdicts)],
        )
        for n in range(size)
    ]


def contrast_items(bank, members, titles=("Retry a failed fare search once", "Compare fares across days")):
    """Items proposed the way the MaTTS contrast stage proposes them: origin
    matts-parallel, under one experience the members share, each citing a
    step of every member (the 2nd item: its last step)."""
    experience = experience_create(bank=bank, task=members[0].task)
    Trajectory.objects.filter(pk__in=[m.pk for m in members]).update(experience=experience)
    for m in members:
        m.experience = experience
    return [
        memory_item_propose(
            bank=bank,
            title=title,
            description=f"When {title.lower()} matters.",
            content=f"{title}: what the successful rollout did and the failed ones did not ({n}).",
            origin=ItemOrigin.MATTS_PARALLEL,
            experience=experience,
            cited_steps=[{"trajectory": str(m.public_id), "step": 3 if n == 0 else m.step_count - 1} for m in members],
        )
        for n, title in enumerate(titles)
    ]
