"""Fixtures of the trajectories tests: ``make_trajectory`` (a trajectory
ingested through the real service). Celery is NOT eager here by default: the
API and service tests inspect the broker queue (``queued_tasks``); the pipeline
modules (stages, sweeper, transitions, relabel, MaTTS, parsing, prompting) opt
in with ``pytest.mark.usefixtures("eager_celery")``. ``fake_llm``, ``no_llm``,
``eager_celery`` and ``queued_tasks`` live in tests/conftest.py; ``queued_tasks``
is re-exported here for the modules that import it from this place."""

import pytest

from tests import factories
from tests.conftest import queued_tasks

__all__ = ["queued_tasks"]


@pytest.fixture
def make_trajectory(bank):
    """Builder: a trajectory ingested into ``bank`` (or ``_bank``) through the real service."""

    def make(_bank=None, **overrides):
        return factories.make_trajectory(_bank or bank, **overrides)

    return make
