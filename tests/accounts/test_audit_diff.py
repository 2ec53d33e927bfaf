"""Audit entries show their before/after as readable changes —
"field: old → new", long text as a word diff — escaped, while the CSV
export keeps the raw JSON."""

from __future__ import annotations

import csv
import io
import json
import re

import pytest
from django.urls import reverse

from accounts.audit.diff import CONTEXT_WORDS, FieldChange, audit_changes, word_diff
from accounts.audit.services import audit_record
from memories.items.services import memory_item_edit

pytestmark = pytest.mark.django_db

LONG = "Open the fare calendar, note the cheapest day, then compare it with the cart total before paying anything."


def test_changed_fields_only_each_as_old_to_new():
    changes = audit_changes(
        {"status": "proposed", "title": "Same", "tags": ["a"], "top_k": 3},
        {"status": "approved", "title": "Same", "tags": ["a", "b"], "top_k": 5, "note": "ok"},
    )
    assert [(c.name, c.old, c.new) for c in changes] == [
        ("status", "proposed", "approved"),
        ("tags", "a", "a, b"),
        ("top_k", "3", "5"),
        ("note", None, "ok"),  # only in after: shown as new
    ]


def test_creation_and_deletion_list_the_values():
    assert audit_changes(None, {"name": "ci", "expires_at": None}) == [
        FieldChange("name", None, "ci"),
        FieldChange("expires_at", None, "—"),
    ]
    assert audit_changes({"user": "ada", "role": "viewer"}, None) == [
        FieldChange("user", "ada", None),
        FieldChange("role", "viewer", None),
    ]


def test_long_text_is_word_diffed_with_long_unchanged_runs_cut():
    new = LONG.replace("cheapest", "cheapest non-stop").replace("paying anything.", "paying.")
    (change,) = audit_changes({"content": LONG}, {"content": new})
    runs = [(op, t.strip()) for op, t in change.words]
    assert ("insert", "non-stop") in runs and ("delete", "paying anything.") in runs and ("insert", "paying.") in runs
    # Joining the runs without the deletions gives the new text back.
    assert "".join(t for op, t in change.words if op != "delete").replace(" ", "") == new.replace(" ", "")

    words = [f"w{i}" for i in range(60)]
    runs = word_diff(" ".join(words), " ".join([*words[:30], "CHANGED", *words[31:]]))
    kept = " ".join(t for op, t in runs if op == "equal")
    assert "…" in kept and "w0 " not in kept and "w59" not in kept  # cut far from the change
    assert f"w{30 - CONTEXT_WORDS}" in kept and f"w{30 + CONTEXT_WORDS}" in kept  # kept near it
    assert ("delete", "w30") in runs and ("insert", "CHANGED") in runs


def test_audit_page_shows_readable_escaped_changes_and_csv_keeps_json(client, bank, owner, item):
    memory_item_edit(item=item, author=owner, title='<script>alert("x")</script>', content=LONG)
    audit_record(
        action="bank.update_settings",
        bank=bank,
        user=owner,
        before={"name": "<b>old</b>"},
        after={"name": '<img src=x onerror="alert(1)">'},
    )
    client.force_login(owner)

    html = client.get(reverse("accounts:bank_audit", kwargs={"bank_id": bank.public_id})).content.decode()

    assert "<script>alert" not in html and "<img src=x" not in html and "<b>old</b>" not in html
    assert "<del>&lt;b&gt;old&lt;/b&gt;</del> → <ins>&lt;img src=x onerror=&quot;alert(1)&quot;&gt;</ins>" in html
    edited = html[html.index("memory_item.edit") :]
    assert re.search(
        r'<span class="field">title</span>:\s*<del>Prefer the official source</del> → <ins>&lt;script&gt;', edited
    )
    assert '<span class="field">content</span>:' in edited and '<span class="diff">' in edited  # long: word diff
    assert '{"title": ' not in html  # no raw JSON any more

    response = client.get(reverse("accounts:bank_audit_csv", kwargs={"bank_id": bank.public_id}))
    rows = list(csv.reader(io.StringIO(b"".join(response.streaming_content).decode())))
    hostile = next(r for r in rows if r[1] == "bank.update_settings")
    assert json.loads(hostile[8]) == {"name": "<b>old</b>"}
    assert json.loads(hostile[9]) == {"name": '<img src=x onerror="alert(1)">'}
