"""The container tests' checks for outside tools name the tool that is missing, so that under CI=true
(where skip_unless fails instead of skipping) the failure says what to install. These run without podman."""

from __future__ import annotations

import pytest

from tests import conftest
from tests.containers import topology


@pytest.fixture
def nothing_installed(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setattr(topology, "PODMAN_HELPER_DIRS", (str(tmp_path),))
    return tmp_path


def test_podman_without_its_pause_binary_is_named_catatonit(nothing_installed):
    assert "catatonit" in topology.pause_binary_missing()
    catatonit = nothing_installed / "catatonit"
    catatonit.write_text("#!/bin/sh\n")
    catatonit.chmod(0o755)
    assert topology.pause_binary_missing() == ""


@pytest.mark.parametrize("tool", ["podman", "runc"])
def test_missing_podman_or_runc_is_named(nothing_installed, tool):
    for present in {"podman", "runc"} - {tool}:
        (nothing_installed / present).write_text("#!/bin/sh\n")
        (nothing_installed / present).chmod(0o755)
    assert topology.podman_available().startswith(f"{tool} is not installed")


def test_under_ci_a_missing_tool_fails_with_its_name(nothing_installed, monkeypatch):
    monkeypatch.setattr(conftest, "IN_CI", True)
    with pytest.raises(pytest.fail.Exception, match="CI=true but catatonit is not installed"):
        conftest.skip_unless(not topology.pause_binary_missing(), topology.pause_binary_missing())
