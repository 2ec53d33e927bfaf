"""The stages (trajectories.stages) run by the processing task: judge →
distill through the real openai client against the fake server, the status
they leave, retries and their backoff, idempotency, and waiting for an LLM."""

import pytest
from celery import signals
from django.db import connection
from django.test.utils import CaptureQueriesContext

from memories.models import ItemOrigin, ItemStatus, MemoryItem
from reasoningbank_site.db import without_waiting_for_disk
from tests.factories import process_trajectory
from tests.trajectories.llm_answers import ITEMS_MD, JUDGE_FAILURE, JUDGE_SUCCESS
from trajectories import stages
from trajectories.judging.prompt_versions import active_prompt_versions
from trajectories.models import JudgmentSource, PromptVersion, Status, Trajectory
from trajectories.tasks import retry_countdown

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("eager_celery")]


def test_judge_success_then_distill_success_items(fake_llm, make_trajectory):
    fake_llm.reply("Looking at step 3, the hours match.\n" + JUDGE_SUCCESS).reply(ITEMS_MD)
    t = process_trajectory(
        make_trajectory(task_id="library-1", agent="library-bot/2", metadata={"env": "prod", "site": {"id": 7}})
    )

    assert t.status == Status.DONE, t.status_detail
    assert t.verdict == "success"
    judgment = t.judgments.get()
    assert (judgment.source, judgment.label, judgment.model, judgment.prompt_version) == (
        "llm",
        "success",
        "fake-model",
        "judge/v1",
    )
    assert judgment.rationale == "The tool result shows Sunday hours and the answer matches."

    items = list(MemoryItem.objects.filter(experience=t.experience).order_by("pk"))
    assert [i.title for i in items] == ["Prefer the official source", "Answer in the asked format"]
    first = items[0]
    assert first.status == ItemStatus.PROPOSED and first.origin == ItemOrigin.SUCCESS
    assert (first.prompt_version, first.model, first.verdict_label) == ("distill_success/v1", "fake-model", "success")
    assert first.source_task_id == "library-1"
    # Provenance the retrieval filters search (memories never reads trajectories).
    assert (first.source_agents, first.source_metadata) == (["library-bot/2"], [{"env": "prod", "site": {"id": 7}}])
    assert first.cited_steps == [
        {"trajectory": str(t.public_id), "step": 2},
        {"trajectory": str(t.public_id), "step": 3},
    ]
    assert first.embedding is not None
    assert t.experience.task == t.task

    judge_prompt, distill_prompt = fake_llm.prompts
    assert "<trajectory>" in judge_prompt and "Find the opening hours" in judge_prompt
    assert "SUCCESS" in distill_prompt and "judged a SUCCESS" in distill_prompt


def test_failure_uses_failure_prompt(fake_llm, make_trajectory):
    fake_llm.reply("Verdict: FAILURE\nThe answer ignores the tool result.").reply(ITEMS_MD)
    t = process_trajectory(make_trajectory())
    assert t.status == Status.DONE and t.verdict == "failure"
    item = MemoryItem.objects.filter(experience=t.experience).first()
    assert (item.origin, item.prompt_version, item.verdict_label) == ("failure", "distill_failure/v1", "failure")
    assert "judged a FAILURE" in fake_llm.prompts[1]


def test_trusted_agent_outcome_skips_the_judge(fake_llm, bank, make_trajectory):
    bank.trust_agent_outcome = True
    bank.save(update_fields=["trust_agent_outcome"])
    fake_llm.reply(ITEMS_MD)
    t = process_trajectory(make_trajectory(outcome="failure"))
    assert t.status == Status.DONE and t.verdict == "failure"
    assert len(fake_llm.requests) == 1
    assert not t.judgments.filter(source=JudgmentSource.LLM).exists()


def test_bank_model_override_is_sent(fake_llm, bank, make_trajectory):
    bank.judge_model, bank.distill_model = "judge-xl", "distill-s"
    bank.save(update_fields=["judge_model", "distill_model"])
    fake_llm.reply(JUDGE_SUCCESS).reply(ITEMS_MD)
    process_trajectory(make_trajectory())
    assert [r["model"] for r in fake_llm.requests] == ["judge-xl", "distill-s"]


def test_unparseable_judge_answer_is_retried_once_then_needs_attention(fake_llm, make_trajectory):
    fake_llm.reply("The agent did some things. Hard to say.").reply("I would rather not decide.")
    t = process_trajectory(make_trajectory())
    assert t.status == Status.NEEDS_ATTENTION
    assert "no parseable verdict" in t.status_detail and "I would rather not decide." in t.status_detail
    assert t.verdict == "" and not t.judgments.exists()
    assert len(fake_llm.requests) == 2
    # The retry carries the first answer and asks for the JSON form.
    assert fake_llm.requests[1]["messages"][1]["content"] == "The agent did some things. Hard to say."
    assert '"verdict"' in fake_llm.prompts[1]


def test_unparseable_then_good_answer_on_the_retry(fake_llm, make_trajectory):
    fake_llm.reply("Hmm.").reply("Status: failure").reply(ITEMS_MD)
    t = process_trajectory(make_trajectory())
    assert t.status == Status.DONE and t.verdict == "failure"


def test_rate_limit_then_success_retries_with_backoff(fake_llm, make_trajectory):
    fake_llm.error(429, "slow down", retry_after=7).reply(JUDGE_SUCCESS).reply(ITEMS_MD)
    retries = []

    def on_retry(sender=None, reason=None, **kwargs):
        retries.append(reason)

    signals.task_retry.connect(on_retry)
    try:
        t = process_trajectory(make_trajectory())
    finally:
        signals.task_retry.disconnect(on_retry)
    assert t.status == Status.DONE and t.verdict == "success"
    assert len(retries) == 1
    assert retries[0].when >= 7  # the server's Retry-After is honoured
    assert len(fake_llm.requests) == 3


def test_backoff_grows_and_is_capped(settings):
    settings.RB_LLM_RETRY_BACKOFF = 10
    settings.RB_LLM_RETRY_BACKOFF_MAX = 100
    assert 7.5 <= retry_countdown(0) <= 10
    assert 30 <= retry_countdown(2) <= 40
    assert retry_countdown(10) <= 100
    assert retry_countdown(0, retry_after=50) == 50


def test_server_errors_until_retries_run_out_park_it_awaiting_the_llm(fake_llm, settings, make_trajectory):
    settings.RB_LLM_MAX_RETRIES = 2
    for _ in range(3):
        fake_llm.error(503, "overloaded")
    t = process_trajectory(make_trajectory())
    # Temporary causes are not a human's problem: it waits for the endpoint, not in needs_attention.
    assert t.status == Status.AWAITING_LLM and t.retry_at is not None and t.enqueued_at is None
    assert "gave up after 3 attempts" in t.status_detail and "503" in t.status_detail
    assert t.judge_attempts == 3
    assert t.verdict == "" and not t.judgments.exists()


def test_timeout_is_transient_and_retried(fake_llm, settings, make_trajectory):
    settings.RB_LLM_TIMEOUT = 0.5
    fake_llm.reply(JUDGE_SUCCESS, delay=2.0).reply(JUDGE_FAILURE).reply(ITEMS_MD)
    t = process_trajectory(make_trajectory())
    assert t.status == Status.DONE
    assert t.verdict == "failure"  # the slow answer was abandoned, the retry's answer counts


def test_timeout_detail_when_retries_run_out(fake_llm, settings, make_trajectory):
    settings.RB_LLM_TIMEOUT = 0.3
    settings.RB_LLM_MAX_RETRIES = 0
    fake_llm.reply(JUDGE_SUCCESS, delay=1.0)
    t = process_trajectory(make_trajectory())
    assert t.status == Status.AWAITING_LLM
    assert "did not answer within 0.3s" in t.status_detail


def test_permanent_error_needs_attention_without_retry(fake_llm, make_trajectory):
    fake_llm.error(404, "model 'fake-model' not found")
    t = process_trajectory(make_trajectory())
    assert t.status == Status.NEEDS_ATTENTION
    assert "404" in t.status_detail and "not found" in t.status_detail
    assert len(fake_llm.requests) == 1


def test_distill_unparseable_needs_attention_but_keeps_the_verdict(fake_llm, make_trajectory):
    fake_llm.reply(JUDGE_SUCCESS).reply("Nothing to learn here.").reply("Still nothing.")
    t = process_trajectory(make_trajectory())
    assert t.status == Status.NEEDS_ATTENTION and t.verdict == "success"
    assert "no complete memory item" in t.status_detail
    assert not MemoryItem.objects.filter(bank=t.bank).exists()


def test_delivered_twice_makes_no_duplicates(fake_llm, make_trajectory):
    fake_llm.reply(JUDGE_SUCCESS).reply(ITEMS_MD)
    t = make_trajectory()
    process_trajectory(t)
    process_trajectory(t)  # a redelivery: nothing left to do, no LLM call
    assert t.judgments.count() == 1
    assert MemoryItem.objects.filter(bank=t.bank).count() == 2
    assert len(fake_llm.requests) == 2


def test_concurrent_claim_loses_quietly(fake_llm, make_trajectory):
    t = make_trajectory()
    Trajectory.objects.filter(pk=t.pk).update(status=Status.JUDGING)  # another worker has it
    assert stages.trajectory_judge(trajectory_id=t.pk) is False
    process_trajectory(t)
    assert t.status == Status.JUDGING and not fake_llm.requests


@pytest.mark.django_db(transaction=True)
def test_stale_result_is_discarded_when_relabelled_meanwhile(fake_llm, make_trajectory):
    """A distillation that finishes after the verdict changed (another
    connection, while the LLM was answering) writes nothing."""
    from django.db import connection

    t = make_trajectory()
    fake_llm.reply(JUDGE_SUCCESS)
    stages.trajectory_judge(trajectory_id=t.pk)

    def relabel_while_distilling(messages):
        try:  # runs in the server's thread, on its own connection
            Trajectory.objects.filter(pk=t.pk).update(verdict="failure")
        finally:
            connection.close()
        return ITEMS_MD

    fake_llm.responder = relabel_while_distilling
    assert stages.trajectory_distill(trajectory_id=t.pk) is False
    assert not MemoryItem.objects.filter(bank=t.bank).exists()


def test_no_llm_with_trusted_verdict_waits_for_distillation(no_llm, bank, make_trajectory):
    bank.trust_agent_outcome = True
    bank.save(update_fields=["trust_agent_outcome"])
    t = process_trajectory(make_trajectory(outcome="success"))
    assert t.status == Status.AWAITING_LLM and t.verdict == "success"


def test_the_stages_reads_are_the_statements_the_orm_writes(make_trajectory, fake_llm):
    """The stages' reads of a trajectory (the row with its bank, judgments and
    prompts; the judge's and the distiller's re-reads under the row lock) are
    compiled once (issue 14): each runs the ORM's statement with the ORM's
    parameters and builds the instances the ORM builds, related rows and
    annotations included."""
    fake_llm.reply(JUDGE_SUCCESS).reply(ITEMS_MD)
    done = make_trajectory(task="Book the cheapest train.")
    assert process_trajectory(done).status == Status.DONE
    fresh = make_trajectory(task="Find the museum's opening hours.")
    PromptVersion.objects.create(bank=done.bank, name="judge", number=2, text="Judge $trajectory", is_active=True)

    def state(obj):
        related = {name: state(rel) for name, rel in obj._state.fields_cache.items() if rel is not None}
        return {k: v for k, v in vars(obj).items() if k != "_state"}, related, obj.get_deferred_fields()

    for compiled, build, method in (
        (stages._TRAJECTORY_ROW, stages._trajectory_row_queryset, list),
        (stages._JUDGE_LOCK, stages._judge_lock_queryset, lambda rows: [rows.get()]),
        (stages._DISTILL_LOCK, stages._distill_lock_queryset, lambda rows: [rows.get()]),
    ):
        for t in (done, fresh):
            assert compiled.sql_with_params(t.pk) == build(t.pk).query.sql_with_params()
            ours, orm = compiled(t.pk), method(build(t.pk))
            assert len(ours) == 1 and [state(o) for o in ours] == [state(o) for o in orm]
    with CaptureQueriesContext(connection) as ours:
        stages._trajectory_row(done.pk), stages._JUDGE_LOCK.get(done.pk), stages._DISTILL_LOCK.get(done.pk)
    with CaptureQueriesContext(connection) as orm:  # the stages' reads as they were written before (first(), get())
        Trajectory.objects.select_related("bank").annotate(
            llm_judged=stages._LLM_JUDGED, active_prompts=active_prompt_versions()
        ).filter(pk=done.pk).first()
        without_waiting_for_disk(
            Trajectory.objects.select_for_update()
            .only("pk", "status", "verdict", "retrieval_id", "bank_id", "step_count")
            .annotate(active_prompts=active_prompt_versions())
            .filter(pk=done.pk)
        ).get()
        Trajectory.objects.select_for_update(of=("self",)).select_related("bank__team", "experience").defer(
            "steps"
        ).get(pk=done.pk)
    assert [q["sql"] for q in ours.captured_queries] == [q["sql"] for q in orm.captured_queries]
    row = stages._trajectory_row(done.pk)
    assert row.llm_judged and row.active_prompts and row.bank.name and row.experience_id
    locked = stages._DISTILL_LOCK.get(done.pk)
    assert locked.get_deferred_fields() == {"steps"} and locked.bank.team.slug and locked.experience.task
    assert stages._trajectory_row(-1) is None
    with pytest.raises(Trajectory.DoesNotExist):
        stages._DISTILL_LOCK.get(-1)
