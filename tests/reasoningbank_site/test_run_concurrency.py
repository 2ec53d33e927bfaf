"""`make run` under many concurrent agents: every request is answered as it
would be one at a time, never with a 5xx. The web server of `make run` holds
a bounded number of database connections, however many clients connect at
once, so the embedded PostgreSQL's ``max_connections`` is never reached."""

import subprocess
import sys
from collections import Counter
from concurrent.futures import ThreadPoolExecutor

import pytest
from django.conf import settings

from reasoningbank_site.demo import DEMO_QUERY
from tests.reasoningbank_site.rb_run_stack import Stack, http_json, rb_run_start, rb_run_stop, stack_env

AGENTS = 16
REQUESTS_EACH = 100
TRAJECTORY_EVERY = 10  # one request in ten sends a trajectory; the rest retrieve


def demo_bank_unthrottle(stack: Stack) -> None:
    """What an owner does on the bank's settings page: no per-token rate limit (the demo's 600 a minute
    would answer most of these requests 429, which is not what this test is about)."""
    code = (
        "from accounts.models import Bank; "
        "assert Bank.objects.filter(team__slug='demo', slug='web-agent').update(rate_limit_per_minute=0) == 1"
    )
    manage = [sys.executable, str(settings.BASE_DIR / "manage.py"), "shell", "-c", code]
    subprocess.run(manage, env=stack.env, cwd=settings.BASE_DIR, check=True, timeout=120)


@pytest.mark.worker
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the embedded stack as `make run` starts it")
def test_make_run_answers_sixteen_concurrent_agents_without_a_server_error(tmp_path):
    stack = stack_env(tmp_path / "data")
    log = tmp_path / "run.log"
    proc = rb_run_start(stack, log)
    try:
        demo_bank_unthrottle(stack)
        token = stack.token()

        def agent(n: int) -> list[tuple[str, int, dict]]:
            answers = []
            for i in range(REQUESTS_EACH):
                if i % TRAJECTORY_EVERY == TRAJECTORY_EVERY - 1:
                    body = {"task": f"Agent {n} task {i}", "steps": [{"kind": "answer", "content": "done"}]}
                    answers.append(("trajectory", *http_json("POST", f"{stack.api}/trajectories", token, body, 120)))
                else:
                    body = {"query": DEMO_QUERY}
                    answers.append(("retrieve", *http_json("POST", f"{stack.api}/retrieve", token, body, 120)))
            return answers

        with ThreadPoolExecutor(AGENTS) as pool:
            answers = [answer for result in pool.map(agent, range(AGENTS)) for answer in result]
    finally:
        rb_run_stop(proc, log)

    assert len(answers) == AGENTS * REQUESTS_EACH
    statuses = Counter((kind, status) for kind, status, _ in answers)
    failed = [(kind, status, body) for kind, status, body in answers if status >= 500]
    assert not failed, f"{len(failed)} server errors ({statuses}); first: {failed[:3]}"
    retrievals = [body for kind, status, body in answers if kind == "retrieve"]
    assert statuses[("retrieve", 200)] == len(retrievals), statuses
    assert all(body["items"] and body["retrieval_id"] for body in retrievals), "each retrieval finds the demo memory"
    assert statuses[("trajectory", 202)] == len(answers) - len(retrievals), statuses
