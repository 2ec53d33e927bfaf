"""`RB_LLM_DEMO=1 make run`: rb_run starts the demo LLM beside the other processes, the worker judges and
distills through it (the real openai client), and what it makes says it is the demo's."""

from __future__ import annotations

import socket

import psutil
import pytest

from tests.reasoningbank_site.rb_run_stack import http_json, rb_run_start, rb_run_stop, stack_env
from tests.worker import wait_for
from trajectories.pipeline import demo_llm


def _demo_processes(port: int) -> list[psutil.Process]:
    wanted = ["-m", "trajectories.pipeline.demo_llm", "--host", "127.0.0.1", "--port", str(port)]
    found = []
    for proc in psutil.process_iter(["cmdline"]):
        cmdline = proc.info["cmdline"] or []
        if cmdline[1:] == wanted:
            found.append(proc)
    return found


@pytest.mark.worker
def test_make_run_with_the_demo_llm_judges_and_distills_and_says_so(tmp_path):
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        demo_port = sock.getsockname()[1]
    stack = stack_env(tmp_path / "data", RB_LLM_DEMO="1", RB_LLM_DEMO_PORT=str(demo_port))
    log = tmp_path / "run.log"
    proc = rb_run_start(stack, log)
    try:
        text = log.read_text()
        assert f"the demo LLM at http://127.0.0.1:{demo_port}/v1 (RB_LLM_DEMO=1)" in text, text
        assert "none configured" not in text
        assert len(_demo_processes(demo_port)) == 1
        token = stack.token()
        status, body = http_json(
            "POST",
            f"{stack.api}/trajectories",
            token,
            {
                "task": "Find a 2 m USB-C cable under $10",
                "steps": [
                    {"kind": "action", "name": "search", "content": "search('USB-C 2m')"},
                    {"kind": "observation", "content": "12 results, cheapest $5.99"},
                ],
                "final_answer": "Added a 2 m cable for $5.99 to the cart.",
            },
        )
        assert status == 202, body
        url = f"{stack.api}/trajectories/{body['id']}"

        def done():
            answer = http_json("GET", url, token)[1]
            return answer if answer.get("status") == "done" else None

        record = wait_for(done, timeout=120, interval=0.5, what="the demo LLM to judge and distill it")
        judgment = record["judgments"][-1]
        assert judgment["model"] == demo_llm.DEMO_MODEL and judgment["source"] == "llm"
        assert judgment["rationale"].startswith(demo_llm.RATIONALE_PREFIX) and "$5.99" in judgment["rationale"]
        assert record["verdict"] == "success" and 1 <= len(record["items"]) <= 3
    finally:
        rb_run_stop(proc, log)
    assert proc.returncode == 0, log.read_text()
    wait_for(lambda: not _demo_processes(demo_port), timeout=30, what="the demo LLM to stop with the stack")
