"""An upgrade as a self-hoster makes it: the previous release's image runs on seeded data, then the new
image migrates forward and takes over; nothing is lost.

"Previous" is main as it was before the newest commit of main's own line (first parents: a merged
branch's inner commits never were main) that added a migration, so the upgrade applies at least one, built with its own docker/ folder and today's dependency list (so its dependency
layers are the cached ones): RB_UPGRADE_FROM=<git revision> chooses another. Its dependencies are
therefore today's, not the ones that commit declared."""

from __future__ import annotations

import os
import stat
import subprocess

import pytest

from tests.containers import images
from tests.containers.topology import ContainerTopology
from tests.production.topology import TopologyError


def previous_commit() -> str:
    chosen = os.environ.get("RB_UPGRADE_FROM", "")
    if not chosen:
        last = subprocess.run(
            ["git", "log", "--first-parent", "-1", "--diff-filter=A", "--format=%H", "--", "*/migrations/*.py"],
            cwd=images.ROOT,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        chosen = f"{last}^1"
    done = subprocess.run(
        ["git", "rev-parse", "--verify", f"{chosen}^{{commit}}"], cwd=images.ROOT, capture_output=True, text=True
    )
    if done.returncode != 0:
        pytest.fail(f"no commit {chosen} to upgrade from (a shallow clone? fetch more history): {done.stderr}")
    return done.stdout.strip()


def _snapshot(top: ContainerTopology, trajectory_id: str) -> dict:
    with top.client() as api:
        trajectory = api.get(f"/trajectories/{trajectory_id}").json()
        hits = api.post("/retrieve", json={"query": "Sunday opening hours of the library"}).json()
    return {
        "status": trajectory["status"],
        "verdict": trajectory["verdict"],
        "items": sorted(item["title"] for item in trajectory["items"]),
        "retrieved": sorted(hit["title"] for hit in hits["items"]),
        "rows": {
            table: top.postgres.count(f"SELECT count(*) FROM {table}")
            for table in ("trajectories_trajectory", "memories_memoryitem", "accounts_apitoken")
        },
    }


def test_the_new_image_migrates_forward_over_the_previous_ones_data_and_keeps_it(built):
    commit = previous_commit()
    images.build_app(images.PREVIOUS, commit=commit)
    top = ContainerTopology(image=images.PREVIOUS, prefix="rbct-upgrade")
    try:
        top.start()
        with top.client() as api:
            response = api.post(
                "/trajectories", json=top.trajectory_body("Find the Sunday opening hours of the library")
            )
            assert response.status_code == 202, response.text
            trajectory_id = response.json()["id"]
            assert top.wait_finished(api, [trajectory_id], timeout=120)[trajectory_id]["status"] == "done"
        before = _snapshot(top, trajectory_id)
        assert before["items"] and before["rows"]["memories_memoryitem"] == len(before["items"])

        migrate_log = top.upgrade(images.APP)

        assert "Applying " in migrate_log, migrate_log  # it did migrate forward
        assert _snapshot(top, trajectory_id) == before
        # And the upgraded stack still learns.
        with top.client() as api:
            response = api.post("/trajectories", json=top.trajectory_body("Find the museum's opening hours"))
            assert response.status_code == 202, response.text
            new_id = response.json()["id"]
            assert top.wait_finished(api, [new_id], timeout=120)[new_id]["status"] == "done"
    except TopologyError as exc:
        pytest.fail(f"upgrade from {commit[:10]}: {exc}", pytrace=False)
    finally:
        print(f"upgrade from {commit[:10]}: timings {top.timings}; builds {images.TIMINGS}")
        top.stop()


def test_the_previous_images_context_gives_unchanged_files_the_working_trees_modes(tmp_path):
    """podman's layer cache compares modes: equal files must come out equal, or the previous image's build
    installs every dependency again instead of reusing the new image's layers. Needs git only."""
    earlier, today = tmp_path / "earlier", tmp_path / "today"
    earlier.mkdir()
    today.mkdir()
    images.build_context(earlier, commit="HEAD")
    images.build_context(today)
    for name in ("docker/requirements.py", "docker/entrypoint.sh", "memories/embedding/onnx.py"):
        modes = {stat.S_IMODE((context / name).stat().st_mode) for context in (earlier, today)}
        assert len(modes) == 1, (name, modes)
