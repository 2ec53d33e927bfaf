"""Memories in the `reasoning-bank` library's own JSONL format, both ways,
through the real library: our export is loaded by ``ReasoningBank.import_``,
the library's ``export()`` is loaded by our import (items arrive proposed).

The library (a dev dependency, pinned) runs in a subprocess of this Python
(RB_LIB_PYTHON overrides it, e.g. a separate virtualenv), on its in-memory
store with a tiny embedder, so no model loads and no SQLite extension is needed."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from memories.items.export import REASONING_BANK_FIELDS
from memories.items.imports import memory_items_import
from memories.items.models import ItemStatus, MemoryItem
from memories.review.decisions import memory_item_approve
from tests import factories

LIB_PYTHON = os.environ.get("RB_LIB_PYTHON", sys.executable)
EXPORT_API = "/api/v1/export/memories.reasoning-bank.jsonl"

LIBRARY_SIDE = """
import asyncio, json, sys
from reasoning_bank import InMemoryStore, ReasoningBank

class Embedder:
    dim = 4
    def embed(self, texts):
        return [[1.0, float(len(t) % 5), 0.5, 0.25] for t in texts]

async def llm(prompt, *, system=None):
    return ""

async def main(source, target):
    bank = ReasoningBank(llm=llm, store=InMemoryStore(), embedder=Embedder())
    count = await bank.import_(source)
    loaded = [item.model_dump(mode="json", exclude={"embedding"}) for item in await bank.list()]
    await bank.add_manual("Written with the library", "When a lesson starts outside the service.", "Add it by hand.")
    await bank.export(target)
    print(json.dumps({"imported": count, "items": loaded}))

asyncio.run(main(*sys.argv[1:]))
"""


def library(tmp_path: Path, source: Path) -> tuple[dict, Path]:
    target = tmp_path / "from-library.jsonl"
    done = subprocess.run(
        [LIB_PYTHON, "-c", LIBRARY_SIDE, str(source), str(target)], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.strip().splitlines()[-1]), target


@pytest.fixture
def retrieve_auth(bank):
    return {"HTTP_AUTHORIZATION": f"Bearer {factories.make_token(bank, scopes=('retrieve',))}"}


@pytest.fixture
def lessons(bank, trajectory, approved, owner):
    distilled = memory_item_approve(item=factories.propose_item(bank, trajectory, origin="failure"), author=owner)
    manual = approved(bank, "Type dates into date pickers", "Calendar widgets.", "Typing beats clicking.")
    factories.propose_item(bank, title="Still proposed: not exported")
    return distilled, manual


def test_export_in_the_library_format_round_trips_through_the_library(client, retrieve_auth, lessons, tmp_path, team):
    distilled, manual = lessons
    response = client.get(EXPORT_API, **retrieve_auth)
    assert response.status_code == 200 and response["Content-Type"].startswith("application/x-ndjson")
    rows = [json.loads(line) for line in b"".join(response.streaming_content).decode().splitlines()]
    assert [tuple(row) for row in rows] == [REASONING_BANK_FIELDS] * 2
    assert [(r["id"], r["source"], r["scope"], r["confidence"]) for r in rows] == [
        (str(distilled.public_id), "failure", "global", 1.0),
        (str(manual.public_id), "manual", "global", 1.0),
    ]
    assert rows[0]["task_signature"] == distilled.experience.task and rows[1]["task_signature"] == ""
    source = tmp_path / "ours.jsonl"
    source.write_bytes(b"".join(json.dumps(r).encode() + b"\n" for r in rows))

    answer, from_library = library(tmp_path, source)
    assert answer["imported"] == 2
    loaded = {item["id"]: item for item in answer["items"]}
    assert loaded[str(distilled.public_id)]["title"] == distilled.title
    assert loaded[str(distilled.public_id)]["source"] == "failure"
    assert loaded[str(manual.public_id)]["content"] == "Typing beats clicking."

    # ...and back: the library's export (embeddings included) imported into another bank, as proposed items
    target = factories.make_bank(team=team, slug="from-library")
    records = [json.loads(line) for line in from_library.read_text().splitlines()]
    assert len(records) == 3 and all(isinstance(r["embedding"], list) for r in records)
    report = memory_items_import(bank=target, author=None, records=records)
    assert report.errors == [] and len(report.created) == 3
    imported = {i.title: i for i in MemoryItem.objects.filter(bank=target)}
    assert set(imported) == {distilled.title, manual.title, "Written with the library"}
    assert {i.status for i in imported.values()} == {ItemStatus.PROPOSED}
    assert {i.origin for i in imported.values()} == {"import"}
    note = imported[distilled.title].versions.get().note
    assert note.startswith(f"Imported from reasoning-bank (id {distilled.public_id}, source failure")


def test_the_import_page_takes_a_library_file(client, reviewer, bank):
    record = {
        "id": "mem_0a1b2c3d4e",
        "title": "Confirm the order before paying",
        "description": "",
        "content": "Read the summary page.",
        "source": "success",
        "task_signature": "Buy a cable",
        "scope": "global",
        "embedding": None,
        "created_at": "2026-11-01T10:00:00",
        "last_used_at": None,
        "use_count": 4,
        "confidence": 0.8,
        "related_ids": [],
    }
    client.force_login(reviewer)
    url = reverse("memories:items_import", kwargs={"bank_id": bank.public_id})
    upload = SimpleUploadedFile("library.jsonl", (json.dumps(record) + "\n").encode())
    response = client.post(url, {"file": upload})
    assert response.status_code == 302
    item = MemoryItem.objects.get(bank=bank)
    assert (item.title, item.description, item.status, item.origin) == (record["title"], "", "proposed", "import")
    assert item.versions.get().note == (
        "Imported from reasoning-bank (id mem_0a1b2c3d4e, source success, used 4 times). Task: Buy a cable"
    )


def test_a_library_record_with_an_unknown_source_imports_nothing(bank):
    records = [
        {"title": "A", "description": "d", "content": "c", "source": "success", "task_signature": ""},
        {"title": "B", "description": "d", "content": "c", "source": "guess", "task_signature": ""},
    ]
    report = memory_items_import(bank=bank, author=None, records=records)
    assert report.errors == [
        "record 2: source must be one of success, failure, matts_contrast, manual (a reasoning-bank record), got 'guess'"
    ]
    assert not MemoryItem.objects.filter(bank=bank).exists()


def test_the_library_export_needs_the_retrieve_scope(client, bank):
    ingest_only = {"HTTP_AUTHORIZATION": f"Bearer {factories.make_token(bank, scopes=('ingest',))}"}
    response = client.get(EXPORT_API, **ingest_only)
    assert response.status_code == 403 and response.json()["code"] == "missing_scope"
