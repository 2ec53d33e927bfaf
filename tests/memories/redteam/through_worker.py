"""What the red-team worker tests share: the fake LLM's answers (the judge says
success, the distiller writes each case's lesson) and the cases sent over the
API in batches, then waited for until the real worker has judged and
distilled every run."""

from __future__ import annotations

from collections.abc import Sequence

from django.conf import settings

from tests.memories.redteam.cases import Case
from tests.trajectories.llm_answers import JUDGE_SUCCESS
from tests.worker import wait_for
from trajectories.models import Status, Trajectory


def case_answers(cases: Sequence[Case]):
    """A fake LLM responder: the judge's success, or the lesson of the case whose key the prompt holds."""

    def answer(messages):
        prompt = messages[-1]["content"]
        if "accomplished the task" in prompt:
            return JUDGE_SUCCESS
        case = next((c for c in cases if c.key in prompt), None)
        assert case is not None, "a distill prompt without a case's key"
        return case.distilled()

    return answer


def cases_through_worker(client, *, bank, token: str, cases: Sequence[Case], what: str, timeout: float) -> None:
    """Send ``cases`` to ``bank`` as trajectories (batches of RB_MAX_BATCH) and wait until the worker has
    taken each to done; a run left in needs attention fails with its status detail."""
    for start in range(0, len(cases), settings.RB_MAX_BATCH):
        batch = cases[start : start + settings.RB_MAX_BATCH]
        response = client.post(
            "/api/v1/trajectories/batch",
            data={"trajectories": [c.trajectory() for c in batch]},
            content_type="application/json",
            HTTP_AUTHORIZATION=f"Bearer {token}",
        )
        assert response.status_code == 200 and response.json()["accepted"] == len(batch), response.content
    runs = Trajectory.objects.filter(bank=bank)
    wait_for(
        lambda: all(t.status in (Status.DONE, Status.NEEDS_ATTENTION) for t in runs.all()),
        timeout=timeout,
        what=what,
    )
    assert sorted({t.status for t in runs.all()}) == [Status.DONE], [t.status_detail for t in runs.all()]
