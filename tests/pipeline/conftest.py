"""Fixtures of the pipeline tests: the fake OpenAI-compatible server, Celery
in eager mode (tasks run inline, retries too, countdowns skipped), and
trajectories created through the real ingestion service."""

import pytest

from reasoningbank_site.celery import app as celery_app
from tests.fake_llm import FakeLLM
from trajectories import llm
from trajectories.services import trajectory_ingest


@pytest.fixture
def fake_llm(settings):
    server = FakeLLM().start()
    settings.RB_LLM_BASE_URL = server.base_url
    settings.OPENAI_API_KEY = ""
    settings.RB_LLM_MODEL = "fake-model"
    settings.RB_LLM_TIMEOUT = 5.0
    llm._client.cache_clear()
    yield server
    server.stop()
    llm._client.cache_clear()


@pytest.fixture
def no_llm(settings):
    settings.RB_LLM_BASE_URL = ""
    settings.OPENAI_API_KEY = ""
    llm._client.cache_clear()


@pytest.fixture(autouse=True)
def eager_celery():
    saved = celery_app.conf.task_always_eager, celery_app.conf.task_eager_propagates
    celery_app.conf.task_always_eager = True
    # Propagation would turn Celery's eager retry into a raised Retry; tests
    # check results explicitly instead (see test_pipeline.process).
    celery_app.conf.task_eager_propagates = False
    yield
    celery_app.conf.task_always_eager, celery_app.conf.task_eager_propagates = saved


STEPS = [
    {"kind": "user", "content": "Find the opening hours of the city library on Sundays."},
    {"kind": "thought", "content": "I should search the library website."},
    {"kind": "tool_call", "content": "search", "name": "web_search", "arguments": '{"q": "city library hours"}'},
    {"kind": "tool_result", "content": "Library hours: Mon-Sat 9-18, Sun 12-17", "name": "web_search"},
    {"kind": "answer", "content": "Sundays 12:00-17:00."},
]


@pytest.fixture
def make_trajectory(bank):
    def make(_bank=None, **overrides):
        data = {
            "task": "Find the opening hours of the city library on Sundays.",
            "steps": STEPS,
            "final_answer": "Sundays 12:00-17:00.",
        }
        data.update(overrides)
        trajectory, _created = trajectory_ingest(bank=_bank or bank, token=None, data=data)
        return trajectory

    return make


JUDGE_SUCCESS = '{"verdict": "success", "rationale": "The tool result shows Sunday hours and the answer matches."}'
JUDGE_FAILURE = '{"verdict": "failure", "rationale": "The answer contradicts the tool result."}'
ITEMS_MD = """The agent succeeded because it verified the hours against an official source.

# Memory Item 1
## Title
Prefer the official source
## Description
Use when a factual question about an institution's schedule comes up.
## Content
Look the fact up on the institution's own pages before answering, and quote the day-specific entry.
## Steps
2, 3

# Memory Item 2
## Title
Answer in the asked format
## Description
Use when the task asks for a specific day or range.
## Content
Restate only the part of the schedule that was asked for, with explicit times.
"""
