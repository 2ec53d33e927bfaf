"""Exporting a bank's items as JSON Lines and importing them into another bank."""

from __future__ import annotations

import pytest
from django.urls import reverse

from memories.items.models import MemoryItem
from memories.items.services import memory_item_create


def _download(response) -> list[dict]:
    import json

    return [json.loads(line) for line in b"".join(response.streaming_content).decode().splitlines()]


def test_export_then_import_into_another_bank_as_proposed_items(client, owner, reviewer, viewer, stranger, bank, team):
    import json

    from django.core.files.uploadedfile import SimpleUploadedFile

    from tests.factories import make_bank

    approved = memory_item_create(
        bank=bank,
        title="Check the cart total before paying",
        description="Before payment.",
        content="Compare the order total with the expected price.",
        author=owner,
        status="approved",
    )
    memory_item_create(bank=bank, title="An idea still under review", description="d", content="c", author=owner)
    export = reverse("memories:items_export", kwargs={"bank_id": bank.public_id})
    client.force_login(stranger)
    assert client.get(export).status_code == 404
    client.force_login(viewer)
    response = client.get(export, {"status": "approved"})
    assert response.status_code == 200 and "attachment" in response["Content-Disposition"]
    rows = _download(response)
    assert [(r["id"], r["title"], r["status"]) for r in rows] == [(str(approved.public_id), approved.title, "approved")]
    assert len(_download(client.get(export))) == 2

    target = make_bank(team=team, slug="target")
    url = reverse("memories:items_import", kwargs={"bank_id": target.public_id})
    upload = "".join(json.dumps(row) + "\n" for row in rows).encode()
    assert client.post(url, {"file": SimpleUploadedFile("m.jsonl", upload)}).status_code == 403  # viewer
    client.force_login(reviewer)
    response = client.post(url, {"file": SimpleUploadedFile("m.jsonl", upload)})
    assert response.status_code == 302 and "origin=import" in response["Location"]
    imported = MemoryItem.objects.get(bank=target)
    assert (imported.title, imported.status, imported.origin, imported.created_by) == (
        approved.title,
        "proposed",
        "import",
        reviewer,
    )
    # The same file again: everything is a duplicate, nothing new.
    client.post(url, {"file": SimpleUploadedFile("m.jsonl", upload)})
    assert MemoryItem.objects.filter(bank=target).count() == 1


@pytest.mark.parametrize(
    "payload,message",
    [
        (
            b'{"title": "t", "description": "d", "content": "c"}\n{"title": "t2", "description": "d"}\n',
            "record 2: missing or empty content",
        ),
        (b'{"title": "t"\n', "Line 1 is not valid JSON"),
        (b'[1, {"title": "", "description": "d", "content": "c"}]', "record 1: expected an object"),
        (b"\xff\xfe", "not UTF-8"),
        (b"", "empty"),
    ],
)
def test_a_bad_import_file_imports_nothing_and_says_why(client, reviewer, bank, payload, message):
    from django.core.files.uploadedfile import SimpleUploadedFile

    client.force_login(reviewer)
    url = reverse("memories:items_import", kwargs={"bank_id": bank.public_id})
    response = client.post(url, {"file": SimpleUploadedFile("m.jsonl", payload)})
    assert response.status_code == 200
    assert message in response.content.decode()
    assert not MemoryItem.objects.filter(bank=bank).exists()


def test_every_bad_line_of_an_import_is_named(client, reviewer, bank):
    from django.core.files.uploadedfile import SimpleUploadedFile

    good = b'{"title": "t", "description": "d", "content": "c"}\n'
    payload = good + b"{broken\n" + good + b"not json either\n" + b"\n" + b'{"title": 1,}\n'
    client.force_login(reviewer)
    url = reverse("memories:items_import", kwargs={"bank_id": bank.public_id})
    html = client.post(url, {"file": SimpleUploadedFile("m.jsonl", payload)}).content.decode()
    for line in (2, 4, 6):
        assert f"Line {line} is not valid JSON" in html
    assert "Line 1 " not in html and "Line 3 " not in html
    assert not MemoryItem.objects.filter(bank=bank).exists()


def test_a_file_of_many_bad_lines_names_twenty_and_counts_the_rest(client, reviewer, bank):
    from django.core.files.uploadedfile import SimpleUploadedFile

    client.force_login(reviewer)
    url = reverse("memories:items_import", kwargs={"bank_id": bank.public_id})
    html = client.post(url, {"file": SimpleUploadedFile("m.jsonl", b"x\n" * 25)}).content.decode()
    assert "Line 20 is not valid JSON" in html and "Line 21 " not in html
    assert "… and 5 more bad lines." in html
