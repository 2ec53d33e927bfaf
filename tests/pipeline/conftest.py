"""Fixtures of the pipeline tests: Celery in eager mode for every test (tasks
run inline, retries too, countdowns skipped), trajectories created through the
real ingestion service, and the fake LLM's canned answers. ``fake_llm``,
``no_llm`` and ``eager_celery`` live in tests/conftest.py."""

import pytest

from tests import factories
from tests.factories import STEPS  # noqa: F401  (the pipeline tests import it from here)


@pytest.fixture(autouse=True)
def tasks_run_inline(eager_celery):
    """Every pipeline test runs its tasks in-process (tests/conftest.py's eager_celery)."""


@pytest.fixture
def make_trajectory(bank):
    """Builder: a trajectory ingested into ``bank`` (or ``_bank``) through the real service."""

    def make(_bank=None, **overrides):
        return factories.make_trajectory(_bank or bank, **overrides)

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
