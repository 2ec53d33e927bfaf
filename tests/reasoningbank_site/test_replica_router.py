"""The read replica's router alone: which alias each read, write and migration goes to, inside and outside
``replica_reads``, with and without a replica configured. (tests/reasoningbank_site/test_read_replica.py runs
it against a real primary and standby.)"""

from __future__ import annotations

import asyncio
import threading

import pytest
from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.sessions.models import Session
from django.core.exceptions import ImproperlyConfigured
from django.test import override_settings

from accounts.models import Bank
from reasoningbank_site import database_settings
from reasoningbank_site.replica import ReplicaRouter, reading_replica, replica_reads
from trajectories.models import Trajectory

# The replica alias is only read from the settings here, never connected to.
pytestmark = pytest.mark.filterwarnings("ignore:Overriding setting DATABASES")

router = ReplicaRouter()


@pytest.fixture
def with_replica():
    """A replica in the settings (never connected to: the decision is given to ``replica_reads``)."""
    databases = {**settings.DATABASES, "replica": {**settings.DATABASES["default"], "TEST": {"MIRROR": "default"}}}
    with override_settings(DATABASES=databases):
        yield


def test_without_a_replica_everything_uses_the_primary():
    with replica_reads():
        assert reading_replica() is False  # nothing configured: not even tried
        assert router.db_for_read(Trajectory) == "default"
    assert router.db_for_read(Trajectory) == "default"


def test_report_reads_go_to_the_replica_and_only_inside_the_block(with_replica):
    assert router.db_for_read(Trajectory) == "default"
    with replica_reads(True):
        assert router.db_for_read(Trajectory) == "replica"
        assert router.db_for_read(Bank) == "replica"
    assert router.db_for_read(Trajectory) == "default"


def test_a_replica_found_down_leaves_the_block_on_the_primary(with_replica):
    with replica_reads(False):
        assert router.db_for_read(Trajectory) == "default"


def test_writes_and_fresh_rows_always_use_the_primary(with_replica):
    with replica_reads(True):
        for model in (Trajectory, Bank, Session, get_user_model()):
            assert router.db_for_write(model) == "default"
        # A session just created, a user just added: read where they were written.
        assert router.db_for_read(Session) == "default"
        assert router.db_for_read(get_user_model()) == "default"


def test_a_related_read_follows_its_instance(with_replica):
    trajectory = Trajectory()
    trajectory._state.db = "default"
    with replica_reads(True):
        assert router.db_for_read(Bank, instance=trajectory) == "default"


def test_migrations_only_on_the_primary_and_relations_across_aliases():
    assert router.allow_migrate("default", "trajectories") is True
    assert router.allow_migrate("replica", "trajectories") is False
    assert router.allow_relation(Trajectory(), Bank()) is True


def test_the_choice_is_per_thread(with_replica):
    seen = {}

    def other_thread():
        seen["alias"] = router.db_for_read(Trajectory)

    with replica_reads(True):
        thread = threading.Thread(target=other_thread)
        thread.start()
        thread.join()
        assert router.db_for_read(Trajectory) == "replica"
    assert seen["alias"] == "default"


def test_the_router_is_installed():
    assert settings.DATABASE_ROUTERS == ["reasoningbank_site.replica.ReplicaRouter"]


def test_the_choice_is_per_asyncio_task(with_replica):

    async def report(started: asyncio.Event, other_done: asyncio.Event) -> list[str]:
        with replica_reads(True):
            started.set()
            await other_done.wait()  # the other task reads while this one is inside its block
            return [router.db_for_read(Trajectory)]

    async def api(started: asyncio.Event, other_done: asyncio.Event) -> list[str]:
        await started.wait()
        alias = router.db_for_read(Trajectory)
        other_done.set()
        return [alias]

    async def both():
        started, done = asyncio.Event(), asyncio.Event()
        return await asyncio.gather(report(started, done), api(started, done))

    assert asyncio.run(both()) == [["replica"], ["default"]]


@pytest.mark.parametrize(("value", "seconds"), [("", 60.0), ("0", 0.0), ("off", 0.0), (" OFF ", 0.0), ("2.5", 2.5)])
def test_the_allowed_lag_is_read_from_the_environment(monkeypatch, value, seconds):
    monkeypatch.setenv("RB_REPLICA_MAX_LAG_SECONDS", value)
    assert database_settings.replica_max_lag() == seconds


@pytest.mark.parametrize("value", ["soon", "-1", "nan", "inf"])
def test_a_bad_allowed_lag_stops_the_start_with_its_name(monkeypatch, value):
    monkeypatch.setenv("RB_REPLICA_MAX_LAG_SECONDS", value)
    with pytest.raises(ImproperlyConfigured, match="RB_REPLICA_MAX_LAG_SECONDS must be a number of seconds"):
        database_settings.replica_max_lag()
