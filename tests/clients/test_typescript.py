"""The TypeScript client (clients/typescript) against a live server: this module
installs its pinned toolchain (``npm ci``, skipped while node_modules matches
package-lock.json), type-checks and compiles the package, its tests and the
typed quick start with ``tsc``, then runs ``node --test`` with RB_URL / RB_TOKEN
pointing at pytest-django's live server, with a real Celery worker and the fake
LLM behind it. Node's own assertions cover the client; this side checks that
node ran every test and passed, and reads back what the adapters' recordings
became in the database."""

from __future__ import annotations

import hashlib
import os
import re
import subprocess
from pathlib import Path

import pytest
from django.conf import settings

from tests import factories
from tests.conftest import skip_unless, which
from tests.fake_llm import FakeLLM
from tests.worker import celery_broker, celery_worker, celery_worker_env, fake_llm_worker_env  # noqa: F401
from trajectories.models import Trajectory

pytestmark = [
    pytest.mark.worker,
    pytest.mark.django_db(transaction=True),
    pytest.mark.parametrize("celery_broker", ["embedded"], indirect=True),
]

PACKAGE = Path(settings.BASE_DIR) / "clients" / "typescript"
STAMP = PACKAGE / "node_modules" / ".rb-package-lock.sha256"
NODE_TIMEOUT = 600

JUDGE_SUCCESS = '{"verdict": "success", "rationale": "The agent did what the task asked."}'
ITEMS = """The agent succeeded by reading the official page.

# Memory Item 1
## Title
Read opening hours on the official site
## Description
Use when a task asks when a public institution is open.
## Content
Open the institution's own hours page and quote the entry for the day asked about.
"""


def _run(argv: list[str], **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run(argv, cwd=PACKAGE, capture_output=True, text=True, check=False, **kwargs)


def _must(result: subprocess.CompletedProcess, what: str) -> None:
    if result.returncode != 0:
        pytest.fail(f"{what} failed (exit {result.returncode}):\n{result.stdout}\n{result.stderr}", pytrace=False)


@pytest.fixture(scope="module")
def compiled() -> Path:
    """The package and its tests compiled (and so type-checked) into dist/ and build/."""
    node, npm = which("node"), which("npm")
    skip_unless(bool(node and npm), "node and npm are not installed: the TypeScript client is not tested")
    lock = hashlib.sha256((PACKAGE / "package-lock.json").read_bytes()).hexdigest()
    if not STAMP.exists() or STAMP.read_text() != lock:
        _must(_run([npm, "ci", "--no-audit", "--no-fund", "--loglevel=error"], timeout=NODE_TIMEOUT), "npm ci")
        STAMP.write_text(lock)
    tsc = str(PACKAGE / "node_modules" / ".bin" / "tsc")
    _must(_run([tsc, "-p", "tsconfig.json"], timeout=NODE_TIMEOUT), "tsc (the package)")
    _must(_run([tsc, "-p", "tsconfig.test.json"], timeout=NODE_TIMEOUT), "tsc (the tests and the typed examples)")
    return PACKAGE / "build" / "test"


@pytest.fixture
def fake_llm():
    server = FakeLLM().start()
    server.responder = lambda messages: JUDGE_SUCCESS if "accomplished the task" in messages[-1]["content"] else ITEMS
    yield server
    server.stop()


@pytest.fixture
def celery_worker_env(fake_llm):
    return fake_llm_worker_env(fake_llm)


def tap_summary(tap: str) -> dict[str, int]:
    """The totals node's TAP reporter ends with (``# tests 12``, ``# pass 12``, …)."""
    return {
        key: int(value) for key, value in re.findall(r"^# (tests|pass|fail|cancelled|skipped|todo) (\d+)$", tap, re.M)
    }


def declared_tests(folder: Path) -> int:
    """How many ``test(`` calls the TypeScript test files declare."""
    return sum(len(re.findall(r"^test\(", path.read_text(), re.M)) for path in folder.glob("*.test.ts"))


def test_the_typescript_client_against_a_live_server(
    compiled, live_server, token, other_bank, cable_lesson, celery_worker, tmp_path
):
    tap_file = tmp_path / "node.tap"
    env = {
        **os.environ,
        "RB_URL": live_server.url,
        "RB_TOKEN": token,
        "RB_OTHER_TOKEN": factories.make_token(other_bank),
        "NO_COLOR": "1",
    }
    files = sorted(str(path) for path in compiled.glob("*.test.js"))
    result = subprocess.run(
        [
            which("node") or "node",
            "--test",
            "--test-reporter=spec",
            "--test-reporter-destination=stdout",
            "--test-reporter=tap",
            f"--test-reporter-destination={tap_file}",
            *files,
        ],
        cwd=PACKAGE,
        env=env,
        capture_output=True,
        text=True,
        timeout=NODE_TIMEOUT,
        check=False,
    )
    output = f"{result.stdout}\n{result.stderr}"
    summary = tap_summary(tap_file.read_text() if tap_file.exists() else "")
    assert result.returncode == 0, f"node --test failed:\n{output}"
    expected = declared_tests(PACKAGE / "test")
    assert expected > 0 and summary.get("tests") == expected, f"node ran {summary}, {expected} declared:\n{output}"
    assert summary.get("pass") == expected and summary.get("fail") == 0, output

    # What the adapters' output became: the steps the service stored.
    ai_sdk = Trajectory.objects.get(external_id="ts-ai-sdk")
    assert ai_sdk.input_format == "anthropic"
    assert [(s["kind"], s.get("name"), s.get("is_error")) for s in ai_sdk.steps] == [
        ("system", None, None),
        ("user", None, None),
        ("thought", None, None),
        ("thought", None, None),
        ("tool_call", "weather", None),
        ("tool_result", "weather", None),
        ("tool_call", "forecast", None),
        ("tool_result", "forecast", True),
        ("action", None, None),
    ]
    contents = [s["content"] for s in ai_sdk.steps]
    assert contents[0] == "Answer briefly."
    assert contents[1] == "What is the weather in Paris?\n[image: https://example.com/paris.png]\n[image]"
    assert contents[2:4] == ["I should call the weather tool.", "Let me check."]
    assert '"city"' in ai_sdk.steps[4]["arguments"] and "Paris" in ai_sdk.steps[4]["arguments"]
    assert '"temperature"' in contents[5] and contents[7] == "timeout"
    assert ai_sdk.final_answer == "It is 21 °C and clear in Paris."

    v4 = Trajectory.objects.get(external_id="ts-ai-sdk-v4")
    assert [(s["kind"], s.get("name"), s["content"]) for s in v4.steps if s["kind"] != "tool_call"] == [
        ("system", None, "Be brief."),
        ("user", None, "What is the weather in Paris?"),
        ("tool_result", "weather", "rain"),
        ("action", None, "Rain."),
    ]

    agents = Trajectory.objects.get(external_id="ts-agents-js")
    assert agents.input_format == "openai_responses"
    assert [(s["kind"], s.get("name"), s.get("call_id")) for s in agents.steps] == [
        ("user", None, None),
        ("thought", None, None),
        ("tool_call", "weather", "call_w"),
        ("tool_result", "weather", "call_w"),
        ("tool_call", "web_search_call", "ws_1"),
        ("tool_result", "web_search_call", "ws_1"),
        ("action", None, None),
    ]
    assert agents.steps[3]["content"] == "21 °C, clear" and agents.steps[5]["content"] == "3 results"
    assert agents.final_answer == "21 °C and clear"  # the run's finalOutput

    raw = Trajectory.objects.get(external_id="ts-openai-items")
    assert [(s["kind"], s.get("name")) for s in raw.steps] == [
        ("user", None),
        ("tool_call", "weather"),
        ("tool_result", "weather"),
        ("action", None),
    ]

    # run(): the success linked its retrieval; the throw was recorded as a failure with its error.
    success = Trajectory.objects.get(external_id="ts-run-success")
    assert success.retrieval is not None and success.outcome == "success" and success.task_id == "shop-17"
    failure = Trajectory.objects.get(external_id="ts-run-failure")
    assert failure.outcome == "failure"
    assert failure.metadata == {"env": "test", "error": "RangeError: the shop is closed"}
    assert failure.steps[-1]["content"].endswith("RangeError: the shop is closed")
    assert failure.retrieval is not None
    assert Trajectory.objects.filter(external_id="ts-run-0042").count() == 1
    assert Trajectory.objects.filter(task_id="ts-lost-answer").count() == 1
