"""A release import through a real worker process and a real broker: the
request answers 202 before anything is written; the worker writes it."""

import json

import pytest

from memories.items.models import ItemStatus, MemoryItem
from memories.releases.models import ImportState, ReleaseImport
from memories.releases.selectors import RELEASE_FORMAT
from tests import factories
from tests.memories.lessons import DATES, LOGIN
from tests.worker import celery_broker, celery_worker, celery_worker_env, wait_for  # noqa: F401

pytestmark = [pytest.mark.worker, pytest.mark.django_db(transaction=True)]


def test_a_worker_writes_a_queued_release_import(client, celery_worker):
    bank = factories.make_bank()
    auth = {"HTTP_AUTHORIZATION": f"Bearer {factories.make_token(bank, scopes=('review',))}"}
    lines = [{"release": {"format": RELEASE_FORMAT, "number": 2}}, LOGIN, DATES]
    body = "".join(json.dumps(line) + "\n" for line in lines)

    queued = client.post("/api/v1/releases/import", data=body, content_type="application/x-ndjson", **auth)
    assert queued.status_code == 202, queued.content

    def finished():
        job = ReleaseImport.objects.get()
        return job if job.state in (ImportState.DONE, ImportState.FAILED) else None

    job = wait_for(finished, timeout=90, what="the worker to write the import")
    assert (job.state, job.created, job.release) == (ImportState.DONE, 2, 1), job.message
    assert MemoryItem.objects.filter(bank=bank, status=ItemStatus.APPROVED, embedding__isnull=False).count() == 2
    status = client.get(queued.json()["status_url"], **auth).json()
    assert status["state"] == "done" and status["created"] == 2
    assert "memories.release_import" in celery_worker.log()
