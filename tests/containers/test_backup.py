"""Backup and restore of the compose stack's database, the documented way: ``manage rb_backup`` in a
one-off container of the image (pg_dump), the database volume lost, a fresh database, ``manage
rb_restore`` (pg_restore) — and every trajectory, item and token is back, served by the same web."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest

from tests.containers.topology import ContainerTopology
from tests.production.topology import TopologyError, wait_until


def test_a_pg_dump_round_trip_brings_the_stack_back_after_the_database_volume_is_lost(built):
    top = ContainerTopology(prefix="rbct-backup")
    with tempfile.TemporaryDirectory(prefix="rb-backups-") as folder:
        Path(folder).chmod(0o777)  # the image's user (uid 10001) writes the dump
        try:
            top.start()
            with top.client() as api:
                response = api.post("/trajectories", json=top.trajectory_body("Find the library's Sunday hours"))
                assert response.status_code == 202, response.text
                trajectory_id = response.json()["id"]
                before = top.wait_finished(api, [trajectory_id], timeout=120)[trajectory_id]
            assert before["status"] == "done" and before["items"]
            rows = {table: top.postgres.count(f"SELECT count(*) FROM {table}") for table in TABLES}

            out = top.manage("rb_backup", "/backups/db.dump", volume=f"{folder}:/backups")
            assert "Backed up the database to /backups/db.dump" in out
            assert (Path(folder) / "db.dump").stat().st_size > 0

            # Disaster: the database container and its volume are gone; a new, empty one starts.
            top.postgres.service.remove()
            top._remove_volume("pgdata")
            top.postgres.service.create_and_start()
            wait_until(top.postgres.service.healthy, timeout=90, what="the new database", interval=0.5)
            assert top.postgres.count("SELECT count(*) FROM pg_tables WHERE schemaname = 'public'") == 0

            out = top.manage("rb_restore", "/backups/db.dump", volume=f"{folder}:/backups")
            assert "Restored the database from /backups/db.dump" in out

            assert {table: top.postgres.count(f"SELECT count(*) FROM {table}") for table in TABLES} == rows
            with top.client() as api:  # the same web processes, reconnected: the same answers
                after = wait_until(
                    lambda: (r := api.get(f"/trajectories/{trajectory_id}")).status_code == 200 and r.json(),
                    timeout=60,
                    what="the restored trajectory",
                )
            assert (after["status"], after["items"], after["judgments"]) == (
                before["status"],
                before["items"],
                before["judgments"],
            )
        except TopologyError as exc:
            pytest.fail(str(exc), pytrace=False)
        finally:
            top.stop()


TABLES = ("trajectories_trajectory", "memories_memoryitem", "accounts_apitoken", "auth_user")
