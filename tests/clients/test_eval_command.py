"""The harness's side of the protocol, with real processes and no service: ``CommandAgent`` runs the
scripted agent (tests/clients/eval_agent.py) as ``rb eval run`` does, and ``result_body`` reads what an
agent answered."""

from __future__ import annotations

import io
import sys
import threading
import time
from pathlib import Path

import pytest

from reasoningbank_client.command_agent import CommandAgent, parse_output
from reasoningbank_client.harness import AgentError, failure_body, result_body

AGENT = [sys.executable, str(Path(__file__).with_name("eval_agent.py"))]


def a_try(key: str = "v3", arm: str = "production", system_block: str = "", **metadata) -> dict:
    return {
        "id": "5b0c4f0e-3f7e-4c2a-9a51-2f1d1c0c9e01",
        "evaluation": "0e9f6a43-6c55-4d53-b1a4-43c0d8e2b7aa",
        "task": {"id": key, "text": f"Open vault {key} and report its code", "metadata": metadata},
        "arm": arm,
        "release": 2 if arm == "candidate" else None,
        "number": 2,
        "k": 3,
        "memories": [],
        "system_block": system_block,
        "memory_tokens": 0,
        "extra_tokens": 41 if arm == "control" else 0,
        "token_budget": None,
        "lease_seconds": 900,
    }


def test_the_command_gets_the_try_on_stdin_and_in_its_environment():
    agent = CommandAgent(AGENT, stderr=io.StringIO())
    served = agent(a_try("v3", "candidate", "# Lessons\nthe answer for v3: 3333."))
    assert served["final_answer"] == "3333" and served["metadata"]["source"] == "a lesson"
    assert served["metadata"]["env"] == {
        "RB_EVAL_RUN": "0e9f6a43-6c55-4d53-b1a4-43c0d8e2b7aa",
        "RB_EVAL_TRY": "5b0c4f0e-3f7e-4c2a-9a51-2f1d1c0c9e01",
        "RB_EVAL_ARM": "candidate",
        "RB_EVAL_TASK_ID": "v3",
        "RB_EVAL_EXTRA_TOKENS": "0",
        "RB_EVAL_TOKEN_BUDGET": "",
    }
    control = agent({**a_try("v3", "control"), "token_budget": 4000})
    assert control["final_answer"] == "unknown" and control["metadata"]["extra_tokens"] == 41
    assert control["metadata"]["env"]["RB_EVAL_EXTRA_TOKENS"] == "41"
    assert control["metadata"]["env"]["RB_EVAL_TOKEN_BUDGET"] == "4000"
    assert result_body(control)["usage"] == {"prompt_tokens": 7, "completion_tokens": 1}


def test_a_crash_is_an_error_naming_the_exit_status_and_the_end_of_stderr():
    stderr = io.StringIO()
    with pytest.raises(AgentError) as failed:
        CommandAgent(AGENT, stderr=stderr)(a_try("v1", behaviour="crash"))
    assert str(failed.value) == "the agent command exited with status 3; its stderr ended with:\nvault v1 jammed"
    assert stderr.getvalue() == "vault v1 jammed\n", "the command's stderr is passed through"


def test_output_that_is_not_one_json_object_is_an_error():
    with pytest.raises(AgentError, match=r"stdout is not one JSON object .*thinking about it.*print logs to stderr"):
        CommandAgent(AGENT)(a_try("v2", behaviour="garbage"))
    with pytest.raises(AgentError, match="printed nothing on stdout"):
        parse_output(b"  \n")
    with pytest.raises(AgentError, match="must print one JSON object, got a JSON list"):
        parse_output(b'[{"final_answer": "1"}]')
    with pytest.raises(AgentError, match="not one JSON object"):
        parse_output(b'{"final_answer": "1"}\n{"final_answer": "2"}')


def test_a_try_past_its_timeout_is_killed_and_an_error():
    agent = CommandAgent(AGENT, timeout=0.5)
    with pytest.raises(AgentError, match=r"timed out after 0\.5 s"):
        agent(a_try("v1", behaviour="hang", seconds=600))
    assert not agent._running


def test_interrupt_stops_the_commands_in_progress_and_starts_no_more():
    agent = CommandAgent(AGENT)
    errors: list[BaseException] = []

    def run() -> None:
        try:
            agent(a_try("v1", behaviour="hang", seconds=600))
        except AgentError as exc:
            errors.append(exc)

    worker = threading.Thread(target=run)
    worker.start()
    deadline = time.monotonic() + 20
    while not agent._running and time.monotonic() < deadline:
        time.sleep(0.05)
    agent.interrupt()
    worker.join(60)  # the command would sleep 600 s
    assert not worker.is_alive()
    assert len(errors) == 1 and "killed by SIGTERM" in str(errors[0])
    with pytest.raises(AgentError, match="the harness is stopping"):
        agent(a_try("v2"))


def test_a_command_that_cannot_start_is_an_error():
    with pytest.raises(AgentError, match="could not start the agent command"):
        CommandAgent(["/nonexistent/agent"])(a_try())


@pytest.mark.parametrize(
    ("answer", "error"),
    [
        ("42", "the agent must answer one JSON object, got str"),
        ({"final_answer": "1", "answer": "1"}, "unknown field(s) 'answer' in the agent's answer; known: "),
        ({"final_answer": 1}, "final_answer must be a string, got int"),
        ({"steps": "walked"}, "steps must be a list of steps, got str"),
        ({"usage": 12}, "usage must be an object {prompt_tokens, completion_tokens}, got int"),
        ({"outcome": "maybe"}, "outcome must be 'success' or 'failure', got 'maybe'"),
    ],
)
def test_an_unreadable_answer_is_an_error_saying_what_is_wrong(answer, error):
    with pytest.raises(AgentError) as failed:
        result_body(answer)
    assert str(failed.value).startswith(error)


def test_a_readable_answer_is_the_try_body_and_a_failure_keeps_its_error():
    body = result_body({"final_answer": "1111", "messages": [{"role": "user", "content": "open v1"}], "outcome": None})
    assert body == {"final_answer": "1111", "messages": [{"role": "user", "content": "open v1"}]}
    assert failure_body("the agent command exited with status 3") == {
        "steps": [{"error": "the agent command exited with status 3"}],
        "final_answer": "",
        "outcome": "failure",
        "metadata": {"error": "the agent command exited with status 3"},
    }
