"""The broker-queue fixture and ``queued_tasks`` live in tests/conftest.py;
they are re-exported here for the modules that import them from this place."""

from tests.conftest import queued_tasks

__all__ = ["queued_tasks"]
