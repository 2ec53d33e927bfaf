"""``rb eval run`` and ``client.evaluate`` against a live server with a real worker.

The agent is tests/clients/eval_agent.py, a script whose answer depends only on the lessons it is
served; tests/clients/evaluation_setup.py builds its task set and a helpful, harmful or equal candidate
release (see there how). The harness runs as the real console command, in a subprocess, with the
service's URL and token in RB_URL / RB_TOKEN."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from django.conf import settings as django_settings

import reasoningbank_client as rb
from tests import factories
from tests.clients.conftest import FAST_RETRY
from tests.clients.eval_agent import answer
from tests.clients.evaluation_setup import CODES, helpful_candidate, serve_every_lesson, vault_jsonl
from tests.fake_llm import FakeLLM
from tests.helpers import wait_for
from tests.worker import celery_broker, celery_worker, celery_worker_env, fake_llm_worker_env  # noqa: F401
from trajectories.evaluation.models import AttemptState, EvalAttempt

pytestmark = [pytest.mark.django_db(transaction=True)]

ROOT = Path(django_settings.BASE_DIR)
AGENT = [sys.executable, str(ROOT / "tests" / "clients" / "eval_agent.py")]
ARMS = ["candidate", "production", "none", "control"]
JUDGE_SUCCESS = '{"verdict": "success", "rationale": "The agent reported a code."}'


@pytest.fixture
def fake_llm():
    server = FakeLLM().start()
    server.responder = lambda messages: JUDGE_SUCCESS
    yield server
    server.stop()


@pytest.fixture
def celery_worker_env(fake_llm):
    return fake_llm_worker_env(fake_llm)


@pytest.fixture
def review_token(bank) -> str:
    return factories.make_token(bank, scopes=("retrieve", "ingest", "review"))


@pytest.fixture
def reviewer(rb_url, review_token):
    with rb.Client(rb_url, review_token, retry=FAST_RETRY, timeout=60) as c:
        yield c


def rb_command(rb_url: str, token: str, *args: str, **kwargs) -> subprocess.Popen:
    env = {
        **os.environ,
        "RB_URL": rb_url,
        "RB_TOKEN": token,
        "PYTHONPATH": os.pathsep.join([str(ROOT / "clients" / "python"), str(ROOT)]),
        "PYTHONUNBUFFERED": "1",
    }
    command = [sys.executable, "-m", "reasoningbank_client.cli", *args]
    # Ctrl-C's default disposition, as from a terminal: a parent that ignores SIGINT (a CI runner's background
    # job) would hand its children the ignore, and the harness would never see the interrupt.
    kwargs.setdefault("preexec_fn", lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    return subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kwargs)


def rb_run(rb_url: str, token: str, *args: str, timeout: float = 300) -> tuple[int, str, str]:
    process = rb_command(rb_url, token, *args)
    out, err = process.communicate(timeout=timeout)
    return process.returncode, out, err


def successes(evaluation_id: str) -> dict[str, set[str]]:
    """Per arm, the task keys of tries whose check passed."""
    found: dict[str, set[str]] = {arm: set() for arm in ARMS}
    for attempt in EvalAttempt.objects.filter(run__public_id=evaluation_id).select_related("arm", "task"):
        found.setdefault(attempt.arm.kind, set())
        if attempt.check_passed:
            found[attempt.arm.kind].add(attempt.task.key)
    return found


@pytest.mark.worker
@pytest.mark.parametrize("celery_broker", ["embedded"], indirect=True)
def test_rb_eval_run_drives_every_arm_and_success_follows_the_lessons(
    bank, approved, reviewer, review_token, rb_url, celery_worker
):
    release = helpful_candidate(bank, approved)
    task_set = reviewer.upload_task_set("vaults", vault_jsonl(), description="four vaults")
    assert (task_set.name, task_set.task_count, task_set.source) == ("vaults", 4, "upload")
    created = reviewer.create_evaluation("vaults", ARMS, 2, release=release, note="helpful")
    assert created.state == "open" and created.progress.total == 4 * 4 * 2
    assert {(a.kind, a.release) for a in created.arms} == {
        ("candidate", 2),
        ("production", 1),
        ("none", None),
        ("control", None),
    }

    code, out, err = rb_run(rb_url, review_token, "eval", "run", created.id, "--parallel", "3", "--", *AGENT)

    assert code == 0, f"exit {code}\n{out}\n{err}"
    assert "32/32 tries recorded" in out and out.strip().splitlines()[-1].startswith("Done: 32/32 tries recorded")
    assert all(AttemptState.RECORDED == a.state for a in EvalAttempt.objects.filter(run__public_id=created.id))
    assert successes(created.id) == {
        "candidate": {"v1", "v2", "v3", "v4"},
        "production": {"v1", "v2", "v3"},
        "none": {"v1", "v2"},
        "control": {"v1", "v2"},
    }
    # Each try's trajectory holds what the agent answered, its usage, and the environment it ran in.
    for attempt in EvalAttempt.objects.filter(run__public_id=created.id).select_related("arm", "task", "trajectory"):
        trajectory = attempt.trajectory
        env = trajectory.metadata["env"]
        assert env["RB_EVAL_RUN"] == created.id and env["RB_EVAL_TRY"] == str(attempt.public_id)
        assert (env["RB_EVAL_ARM"], env["RB_EVAL_TASK_ID"]) == (attempt.arm.kind, attempt.task.key)
        assert env["RB_EVAL_TOKEN_BUDGET"] == "" and env["RB_EVAL_EXTRA_TOKENS"] == str(attempt.extra_tokens)
        assert attempt.completion_tokens == 1 and attempt.prompt_tokens and attempt.prompt_tokens > 0
        assert (trajectory.final_answer == CODES[attempt.task.key]) is attempt.check_passed
    control = EvalAttempt.objects.filter(run__public_id=created.id, arm__kind="control").first()
    assert control.extra_tokens > 0, "the control is given the tokens of the block it was not served"

    wait_for(lambda: reviewer.evaluation(created.id).results.get("complete"), what="the run's results (a worker's)")
    code, out, err = rb_run(rb_url, review_token, "eval", "status", created.id)
    assert code == 0, err
    assert "32/32 tries recorded" in out and f"Evaluation {created.id}" in out
    assert "candidate: success 100 % of 8 known tries, pass^2 100 %" in out, out
    assert "production: success 75 % of 8 known tries" in out and "none: success 50 %" in out, out
    assert "candidate vs production: +25 points" in out and "better on v4" in out, out
    assert "Verdict: at actual cost " in out, out

    # The run is finished: a second harness is told so, and nothing changes.
    code, out, err = rb_run(rb_url, review_token, "eval", "run", created.id, "--", *AGENT)
    assert code == 0 and "Done: 32/32" in out, f"{out}\n{err}"


def test_a_crash_or_unreadable_output_is_recorded_as_a_failure_with_the_error(bank, reviewer, review_token, rb_url):
    serve_every_lesson(bank)
    reviewer.upload_task_set("misbehaving", vault_jsonl(v1={"behaviour": "crash"}, v2={"behaviour": "garbage"}))
    run = reviewer.create_evaluation("misbehaving", ["none", "control"], 1)

    code, out, err = rb_run(rb_url, review_token, "eval", "run", run.id, "--", *AGENT)

    assert code == 0, f"{out}\n{err}"
    assert "vault v1 jammed" in err, "the command's stderr is passed through"
    assert "(this harness ran 8, 4 recorded as failures by the harness)" in out
    for attempt in EvalAttempt.objects.filter(run__public_id=run.id).select_related("task", "trajectory"):
        trajectory = attempt.trajectory
        assert attempt.state == AttemptState.RECORDED
        if attempt.task.key == "v1":
            assert trajectory.outcome == "failure" and attempt.check_passed is False
            assert "exited with status 3" in trajectory.metadata["error"]
            assert "vault v1 jammed" in trajectory.steps[-1]["content"]
        elif attempt.task.key == "v2":
            assert "not one JSON object" in trajectory.metadata["error"]
            assert "thinking about it" in trajectory.steps[-1]["content"]
        else:
            assert "error" not in trajectory.metadata


def test_ctrl_c_records_nothing_in_progress_and_the_run_resumes(bank, reviewer, review_token, rb_url, settings):
    settings.RB_EVAL_LEASE_SECONDS = 2  # the live server runs in this process: its claims expire fast
    serve_every_lesson(bank)
    slow = {"behaviour": "slow", "seconds": 30}
    reviewer.upload_task_set("slow vaults", vault_jsonl(v1=slow, v2=slow, v3=slow, v4=slow))
    run = reviewer.create_evaluation("slow vaults", ["none", "control"], 1)

    harness = rb_command(rb_url, review_token, "eval", "run", run.id, "--parallel", "2", "--", *AGENT)
    deadline = time.monotonic() + 60
    while EvalAttempt.objects.filter(run__public_id=run.id, state=AttemptState.CLAIMED).count() < 2:
        assert time.monotonic() < deadline and harness.poll() is None, harness.communicate()
        time.sleep(0.1)
    time.sleep(0.5)  # the agents are running
    harness.send_signal(signal.SIGINT)
    out, err = harness.communicate(timeout=60)  # it stops its agents first; a loaded machine schedules it late

    assert harness.returncode == 130, f"{out}\n{err}"
    assert "stopped" in err and "not recorded" in err
    assert EvalAttempt.objects.filter(run__public_id=run.id, state=AttemptState.RECORDED).count() == 0
    assert EvalAttempt.objects.filter(run__public_id=run.id, state=AttemptState.CLAIMED).count() == 2

    time.sleep(2.5)  # past the lease: the interrupted tries are offered again
    summary = reviewer.evaluate(run.id, answer, parallel=4)
    assert summary.done and summary.ran == 8 and summary.recorded == 8 and summary.failed == 0
    assert summary.progress.recorded == summary.progress.total == 8


def test_refusals_are_explained_with_their_exit_code(bank, reviewer, review_token, rb_url):
    serve_every_lesson(bank)
    reviewer.upload_task_set("vaults", vault_jsonl())
    run = reviewer.create_evaluation("vaults", ["none", "control"], 1)
    reviewer.cancel_evaluation(run.id)

    code, out, err = rb_run(rb_url, review_token, "eval", "run", run.id, "--", *AGENT)
    assert code == 3 and "finished or cancelled" in err, f"{out}\n{err}"

    code, out, err = rb_run(rb_url, review_token, "eval", "run", "00000000-0000-0000-0000-000000000000", "--", *AGENT)
    assert code == 3 and "no such evaluation" in err, f"{out}\n{err}"

    code, out, err = rb_run(rb_url, review_token, "eval", "run", run.id, "--", "no-such-agent-command")
    assert code == 2 and "command not found: no-such-agent-command" in err

    code, out, err = rb_run(rb_url, review_token, "eval", "run", run.id)
    assert code == 2 and "give the agent command after --" in err

    code, out, err = rb_run(rb_url, review_token, "eval", "run", run.id, "--timeout", "0", "--", *AGENT)
    assert code == 2 and "--timeout must be a number of seconds above 0" in err

    code, out, err = rb_run(rb_url, "rb_not-a-token", "eval", "run", run.id, "--", *AGENT)
    assert code == 3 and "check RB_TOKEN" in err, err
