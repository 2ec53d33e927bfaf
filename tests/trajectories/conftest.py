import json
from pathlib import Path

import pytest
from django.conf import settings


def _queue_dir() -> Path | None:
    folder = settings.CELERY_BROKER_TRANSPORT_OPTIONS.get("data_folder_in")
    return Path(folder) if folder else None


@pytest.fixture(autouse=True)
def broker_queue():
    """The filesystem broker's queue folder (None under Redis). Messages our
    tests enqueue are removed afterwards so no later worker picks them up."""
    folder = _queue_dir()
    before = set(folder.glob("*.msg")) if folder else set()
    yield folder
    if folder:
        for path in set(folder.glob("*.msg")) - before:
            path.unlink(missing_ok=True)


def queued_tasks(folder: Path, since: set) -> list[tuple[str, str]]:
    """(task name, argsrepr) of the messages that arrived after ``since``."""
    found = []
    for path in sorted(set(folder.glob("*.msg")) - since):
        headers = json.loads(path.read_text())["headers"]
        found.append((headers["task"], headers["argsrepr"]))
    return found
