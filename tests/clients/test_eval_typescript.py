"""The TypeScript client's ``rb eval run`` (clients/typescript, ``dist/cli.js``, its package bin) runs
one small evaluation against a live server: the scripted agent (tests/clients/eval_agent.py) is the
command, and what it was served decides each try's check, read back from the database."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

import reasoningbank_client as rb
from tests import factories
from tests.clients.evaluation_setup import CODES, lesson, serve_every_lesson, vault_jsonl
from tests.clients.test_typescript import NODE_TIMEOUT, PACKAGE, _must, _run, compiled  # noqa: F401
from tests.conftest import which
from tests.fake_llm import FakeLLM
from tests.helpers import wait_for
from tests.worker import celery_broker, celery_worker, celery_worker_env, fake_llm_worker_env  # noqa: F401
from trajectories.evaluation.models import AttemptState, EvalAttempt

pytestmark = pytest.mark.django_db(transaction=True)
JUDGE_SUCCESS = '{"verdict": "success", "rationale": "The agent reported a code."}'

AGENT = [sys.executable, str(Path(__file__).with_name("eval_agent.py"))]


@pytest.fixture
def fake_llm():
    server = FakeLLM().start()
    server.responder = lambda messages: JUDGE_SUCCESS
    yield server
    server.stop()


@pytest.fixture
def celery_worker_env(fake_llm):
    return fake_llm_worker_env(fake_llm)


@pytest.fixture(scope="module")
def cli(compiled) -> Path:
    """dist/cli.js, compiled with Node's types (tsconfig.cli.json)."""
    _must(
        _run([str(PACKAGE / "node_modules" / ".bin" / "tsc"), "-p", "tsconfig.cli.json"], timeout=NODE_TIMEOUT),
        "tsc (the bin)",
    )
    return PACKAGE / "dist" / "cli.js"


def rb_ts(cli: Path, rb_url: str, token: str, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "RB_URL": rb_url, "RB_TOKEN": token, "NO_COLOR": "1"}
    return subprocess.run(
        [which("node") or "node", str(cli), *args], env=env, capture_output=True, text=True, timeout=300, check=False
    )


@pytest.mark.worker
@pytest.mark.parametrize("celery_broker", ["embedded"], indirect=True)
def test_the_typescript_harness_runs_a_small_evaluation(cli, bank, approved, rb_url, celery_worker):
    serve_every_lesson(bank)
    lesson(approved, bank, "v3", CODES["v3"])  # production serves v3's code
    review_token = factories.make_token(bank, scopes=("ingest", "review"))
    with_review = rb.Client(rb_url, review_token)
    with_review.upload_task_set("vaults", vault_jsonl())
    run = with_review.create_evaluation("vaults", ["production", "none"], 1)

    done = rb_ts(cli, rb_url, review_token, "eval", "run", run.id, "--parallel", "2", "--", *AGENT)

    assert done.returncode == 0, f"{done.stdout}\n{done.stderr}"
    assert "8/8 tries recorded" in done.stdout and done.stdout.strip().splitlines()[-1].startswith("Done: 8/8")
    attempts = list(EvalAttempt.objects.filter(run__public_id=run.id).select_related("arm", "task", "trajectory"))
    assert all(a.state == AttemptState.RECORDED for a in attempts)
    passed = {(a.arm.kind, a.task.key) for a in attempts if a.check_passed}
    assert passed == {("production", "v1"), ("production", "v2"), ("production", "v3"), ("none", "v1"), ("none", "v2")}
    for attempt in attempts:
        env = attempt.trajectory.metadata["env"]
        assert (env["RB_EVAL_TRY"], env["RB_EVAL_ARM"]) == (str(attempt.public_id), attempt.arm.kind)
        assert attempt.completion_tokens == 1

    wait_for(lambda: with_review.evaluation(run.id).results.get("complete"), what="the run's results (a worker's)")
    status = rb_ts(cli, rb_url, review_token, "eval", "status", run.id)
    assert status.returncode == 0 and "8/8 tries recorded" in status.stdout, status.stderr
    assert "production: success 75 % of 4 known tries, pass^1 75 %" in status.stdout, status.stdout
    assert "none: success 50 % of 4 known tries" in status.stdout, status.stdout
    assert "Verdict: at actual cost " in status.stdout, status.stdout

    with_review.close()
    refused = rb_ts(cli, rb_url, review_token, "eval", "run", "00000000-0000-0000-0000-000000000000", "--", *AGENT)
    assert refused.returncode == 3 and "no such evaluation" in refused.stderr, refused.stderr
    missing = rb_ts(cli, rb_url, review_token, "eval", "run", run.id, "--", "no-such-agent-command")
    assert missing.returncode == 2 and "command not found" in missing.stderr
    bad = rb_ts(cli, rb_url, review_token, "eval", "run", run.id, "--parallel", "0", "--", *AGENT)
    assert bad.returncode == 2 and "--parallel must be an integer of at least 1" in bad.stderr


def test_ctrl_c_stops_the_typescript_harness_recording_nothing_in_progress(cli, bank, rb_url):
    serve_every_lesson(bank)
    review_token = factories.make_token(bank, scopes=("ingest", "review"))
    with rb.Client(rb_url, review_token) as reviewer:
        slow = {"behaviour": "slow", "seconds": 600}
        reviewer.upload_task_set("slow vaults", vault_jsonl(v1=slow, v2=slow, v3=slow, v4=slow))
        run = reviewer.create_evaluation("slow vaults", ["none", "control"], 1)
    env = {**os.environ, "RB_URL": rb_url, "RB_TOKEN": review_token, "NO_COLOR": "1"}
    harness = subprocess.Popen(
        [which("node") or "node", str(cli), "eval", "run", run.id, "--parallel", "2", "--", *AGENT],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    wait_for(
        lambda: (
            harness.poll() is not None
            or EvalAttempt.objects.filter(run__public_id=run.id, state=AttemptState.CLAIMED).count() == 2
        ),
        what="two tries claimed",
    )
    assert harness.poll() is None, harness.communicate()
    harness.send_signal(signal.SIGINT)
    out, err = harness.communicate(timeout=60)  # the agents would sleep 600 s: they were stopped

    assert harness.returncode == 130, f"{out}\n{err}"
    assert "stopped" in err and "not recorded" in err
    assert EvalAttempt.objects.filter(run__public_id=run.id, state=AttemptState.RECORDED).count() == 0
    assert EvalAttempt.objects.filter(run__public_id=run.id, state=AttemptState.CLAIMED).count() == 2
