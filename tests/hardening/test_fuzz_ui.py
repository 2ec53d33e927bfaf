"""Generated fuzz of every UI form (issue 12): each field of each form and
each GET filter gets hostile values — NUL, lone surrogates (as raw bytes),
huge numbers and dates, deeply nested JSON, CR/LF, a 1 MB string — posted as
the logged-in owner. Any 5xx fails. Bounded: one request per (form, value)."""

from __future__ import annotations

from urllib.parse import urlencode

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from tests.ui.conftest import make_trajectory, propose

HOSTILE = {
    "nul": "a\x00b",
    "surrogate": "a\udcffb",  # what a stray UTF-8 byte decodes to with surrogateescape
    "crlf": "x\r\nBcc: evil@example.com",
    "huge-int": "9223372036854775808",
    "power": str(10**30),
    "negative": "-1",
    "date-max": "9999-12-31",
    "date-min": "0001-01-01",
    "datetime-max": "9999-12-31T23:59",
    "deep-json": "[" * 5000,
    "float": "1e308",
    "nan": "NaN",
    "megabyte": "x" * (1024 * 1024),
    "uuid-ish": "00000000-0000-0000-0000-000000000000",
}


def forms_under_test(bank, team, item, trajectory):
    """(method, url, fields) for every form and filter of the UI."""
    b, t = bank.public_id, team.public_id
    detail = {"bank_id": b, "trajectory_id": trajectory.public_id}
    item_url = reverse("memories:item_detail", kwargs={"bank_id": b, "item_id": item.public_id})
    return [
        ("post", reverse("accounts:team_create"), {"name": ""}),
        ("post", reverse("accounts:team", kwargs={"team_id": t}), {"action": "invite", "email": "", "role": "viewer"}),
        ("post", reverse("accounts:team", kwargs={"team_id": t}), {"action": "role", "membership": "", "role": ""}),
        ("post", reverse("accounts:team", kwargs={"team_id": t}), {"action": "revoke_invitation", "invitation": ""}),
        (
            "post",
            reverse("accounts:bank_create", kwargs={"team_id": t}),
            {"name": "", "description": "", "retrieval_mode": "items", "top_k": ""},
        ),
        (
            "post",
            reverse("accounts:bank_settings", kwargs={"bank_id": b}),
            {
                "action": "save",
                "name": "",
                "description": "",
                "top_k": "",
                "min_similarity": "",
                "holdout_fraction": "",
                "rate_limit_per_minute": "",
                "reward_threshold": "",
            },
        ),
        (
            "post",
            reverse("accounts:bank_tokens", kwargs={"bank_id": b}),
            {"action": "create", "name": "", "scopes": "retrieve", "expires_at": ""},
        ),
        ("post", reverse("accounts:bank_tokens", kwargs={"bank_id": b}), {"action": "revoke", "token": ""}),
        (
            "get",
            reverse("accounts:bank_audit", kwargs={"bank_id": b}),
            {"action": "", "actor": "", "object": "", "since": "", "until": "", "page": ""},
        ),
        ("get", reverse("accounts:bank_audit_csv", kwargs={"bank_id": b}), {"since": "", "until": "", "actor": ""}),
        ("get", reverse("accounts:team_audit", kwargs={"team_id": t}), {"since": "", "until": "", "page": ""}),
        (
            "get",
            reverse("memories:review", kwargs={"bank_id": b}),
            {"q": "", "origin": "", "verdict": "", "agent": "", "date_from": "", "date_to": "", "page": ""},
        ),
        (
            "post",
            reverse("memories:review", kwargs={"bank_id": b}),
            {"action": "approve", "items": "", "reason": "", "next": ""},
        ),
        ("get", reverse("memories:items", kwargs={"bank_id": b}), {"status": "", "q": "", "page": ""}),
        (
            "post",
            reverse("memories:item_create", kwargs={"bank_id": b}),
            {"title": "", "description": "", "content": ""},
        ),
        ("post", item_url, {"action": "edit", "title": "", "description": "", "content": "", "note": ""}),
        ("post", item_url, {"action": "reject", "reason": ""}),
        ("post", item_url, {"action": "merge", "into": "", "note": ""}),
        ("get", reverse("memories:items_export", kwargs={"bank_id": b}), {"status": ""}),
        ("get", reverse("memories:playground", kwargs={"bank_id": b}), {"q": "", "k": ""}),
        (
            "get",
            reverse("trajectories:list", kwargs={"bank_id": b}),
            {"q": "", "status": "", "verdict": "", "agent": "", "page": ""},
        ),
        ("post", reverse("trajectories:detail", kwargs=detail), {"label": "", "reason": ""}),
        ("get", reverse("trajectories:impact", kwargs={"bank_id": b}), {"days": ""}),
        ("get", reverse("accounts:signup"), {"next": ""}),
        ("post", reverse("accounts:password_reset"), {"email": ""}),
    ]


@pytest.mark.parametrize("value_name", list(HOSTILE))
def test_every_ui_form_survives_hostile_values(client, owner, bank, team, value_name):
    trajectory = make_trajectory(bank)
    item = propose(bank, trajectory)
    client.force_login(owner)
    value = HOSTILE[value_name]
    failures = []
    for method, url, fields in forms_under_test(bank, team, item, trajectory):
        for field in fields:
            data = {**fields, field: value}
            if method == "get" and len(value) > 4000:
                continue  # a URL of 1 MB is refused by every server before Django
            # As raw bytes, so a lone surrogate arrives as the invalid UTF-8 a browser could send.
            encoded = urlencode({k: v.encode("utf-8", "surrogateescape") for k, v in data.items()})
            if method == "get":
                response = client.get(f"{url}?{encoded}")
            else:
                response = client.post(url, encoded, content_type="application/x-www-form-urlencoded")
            if response.status_code >= 500:
                failures.append(f"{method.upper()} {url} {field}={value_name}: {response.status_code}")
            if getattr(response, "streaming", False):
                b"".join(response.streaming_content)
    assert not failures, failures


@pytest.mark.parametrize("value_name", ["nul", "surrogate", "deep-json", "megabyte", "crlf"])
def test_import_form_survives_hostile_files(client, owner, bank, value_name):
    client.force_login(owner)
    value = HOSTILE[value_name]
    url = reverse("memories:items_import", kwargs={"bank_id": bank.public_id})
    for content in (value, '{"title": "' + value + '", "description": "d", "content": "c"}'):
        upload = SimpleUploadedFile("f.jsonl", content.encode("utf-8", "surrogateescape"), "application/jsonl")
        assert client.post(url, {"file": upload}).status_code < 500
