"""`make run`'s log: the worker logs warnings only unless RB_WORKER_LOG_LEVEL
asks for more, so its periodic tasks do not scroll the banner away. (The
banner itself is read from a real `rb_run` in test_rb_run.py.)"""

from __future__ import annotations

from pathlib import Path

from django.conf import settings

from reasoningbank_site import workers
from reasoningbank_site.supervisor import beat_argv, worker_argv


def test_the_worker_logs_warnings_by_default(monkeypatch):
    monkeypatch.delenv("RB_WORKER_LOG_LEVEL", raising=False)
    argv = worker_argv(Path("/tmp/rb-data"))
    assert argv[argv.index("--loglevel") + 1] == "WARNING"
    monkeypatch.setenv("RB_WORKER_LOG_LEVEL", "info")
    argv = worker_argv(Path("/tmp/rb-data"))
    assert argv[argv.index("--loglevel") + 1] == "INFO"


def test_each_worker_role_consumes_its_own_queues_and_beat_runs_in_none_of_them():
    argv = {role.name: worker_argv(Path("/tmp/rb-data"), role=role) for role in workers.ROLES}
    queues = {name: line[line.index("--queues") + 1] for name, line in argv.items()}
    assert queues == {"worker": "celery,maintenance", "webhook-worker": "webhooks", "bulk-worker": "bulk"}
    # Every queue the app declares has exactly one role consuming it.
    declared = sorted(queue.name for queue in settings.CELERY_TASK_QUEUES)
    assert sorted(q for line in queues.values() for q in line.split(",")) == declared
    assert argv["webhook-worker"][argv["webhook-worker"].index("--pool") + 1] == "threads"
    # Beat is a process of its own, which rb_run restarts when it dies (inside a worker, nobody would).
    assert [name for name, line in argv.items() if "-B" in line] == []
    assert beat_argv(Path("/tmp/rb-data"))[4:6] == ["reasoningbank_site", "beat"]
