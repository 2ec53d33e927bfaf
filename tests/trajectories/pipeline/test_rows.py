"""The row the stages work on (trajectories.pipeline.rows), read once."""

import pytest

from tests.factories import process_trajectory
from tests.trajectories.llm_answers import ITEMS_MD, JUDGE_SUCCESS
from trajectories.judging.models import PromptVersion
from trajectories.judging.prompt_versions import active_prompt_versions
from trajectories.models import Status, Trajectory
from trajectories.pipeline import rows

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("eager_celery")]


def test_the_row_is_read_once_with_its_bank_judged_versions_and_active_prompts(
    make_trajectory, fake_llm, django_assert_max_num_queries
):
    """The stages read a trajectory's row once: with its bank, the prompt
    versions of its LLM judgments and the bank's active prompts; a missing
    row is None."""
    fake_llm.reply(JUDGE_SUCCESS).reply(ITEMS_MD)
    done = make_trajectory(task="Book the cheapest train.")
    assert process_trajectory(done).status == Status.DONE
    fresh = make_trajectory(task="Find the museum's opening hours.")
    PromptVersion.objects.create(bank=done.bank, name="judge", number=2, text="Judge $trajectory", is_active=True)

    with django_assert_max_num_queries(1):
        row = rows.trajectory_row(done.pk)
        assert row.bank.name and row.experience_id
    assert row.llm_judged == ["judge/v1"] and row.active_prompts
    assert (
        row.active_prompts
        == Trajectory.objects.annotate(active_prompts=active_prompt_versions()).get(pk=done.pk).active_prompts
    )
    assert rows.trajectory_row(fresh.pk).llm_judged == []
    assert rows.trajectory_row(-1) is None
