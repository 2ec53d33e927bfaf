"""The container tests need podman (with runc) and mmdebstrap, as root. Without them they are skipped,
each saying why; under CI=true a missing part fails instead (tests/conftest.py's skip_unless)."""

from __future__ import annotations

import pytest

from tests.conftest import skip_unless
from tests.containers import images
from tests.containers.topology import podman_available


@pytest.fixture(scope="session")
def built() -> dict[str, float]:
    """Every image built (once per session); the build times, in seconds."""
    why = podman_available()
    skip_unless(not why, f"{why}: the container tests (image, upgrade, backup, Kubernetes) are not run")
    try:
        images.build_all()
    except images.BuildError as exc:
        pytest.fail(f"the images did not build: {exc}", pytrace=False)
    return images.TIMINGS
