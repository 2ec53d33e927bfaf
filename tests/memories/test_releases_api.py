"""The releases API: labels, no-ops as 200, refusals as JSON, a release
exported from one bank and imported into another, and the diff of the two."""

from __future__ import annotations

import json

import pytest

from memories.embedding.items import memory_item_embed_refresh
from memories.items.models import ItemStatus, MemoryItem
from memories.items.services import memory_item_edit
from memories.releases.selectors import release_get, release_versions
from memories.review.decisions import memory_item_approve
from tests import factories
from tests.factories import make_done_trajectory, propose_item
from tests.memories.lessons import DATES, LOGIN

API = "/api/v1"


@pytest.fixture
def review(bank):
    return {"HTTP_AUTHORIZATION": f"Bearer {factories.make_token(bank, scopes=('review', 'retrieve'))}"}


@pytest.fixture
def two(bank, owner):
    bank.min_similarity = -1.0
    bank.save(update_fields=["min_similarity"])
    trajectory = make_done_trajectory(bank)
    items = propose_item(bank, trajectory, **LOGIN), propose_item(bank, trajectory, **DATES)
    for item in items:
        memory_item_approve(item=item, author=owner, confirm_duplicate=True)  # releases 1 and 2
    return items


def _post(client, path, auth, body=None):
    return client.post(f"{API}{path}", data=json.dumps(body or {}), content_type="application/json", **auth)


def test_the_release_list_and_diff_as_the_banks_reviewer_and_refused_to_others(client, bank, review, two, other_bank):
    listed = client.get(f"{API}/releases", **review).json()
    assert listed["mode"] == "automatic" and listed["production"] == 2 and listed["canary"] is None
    assert [(r["number"], r["items"], r["labels"]) for r in listed["releases"]] == [(2, 2, ["production"]), (1, 1, [])]
    diff = client.get(f"{API}/releases/2/diff", **review).json()
    assert diff["from"] == 1 and [c["title"] for c in diff["added"]] == [DATES["title"]]
    assert client.get(f"{API}/releases/2/diff?against=2", **review).json()["added"] == []
    missing = client.get(f"{API}/releases/9/diff", **review)
    assert missing.status_code == 404 and "Release 9 does not exist" in missing.json()["detail"]
    by_id = client.get(f"{API}/releases/{listed['releases'][0]['id']}/diff", **review).json()
    assert by_id["to"] == 2
    assert client.get(f"{API}/releases/99999999999999/diff", **review).status_code == 404
    for bad in ("x", "-1"):  # not a release number nor an id: a validation error
        assert client.get(f"{API}/releases/{bad}/diff", **review).status_code == 422
    # Another bank's token sees its own (empty) releases, never ours; no token is 401.
    theirs = {"HTTP_AUTHORIZATION": f"Bearer {factories.make_token(other_bank, scopes=('review',))}"}
    assert client.get(f"{API}/releases", **theirs).json()["releases"] == []
    assert client.get(f"{API}/releases/2/diff", **theirs).status_code == 404
    assert client.get(f"{API}/releases").status_code == 401
    retrieve_only = {"HTTP_AUTHORIZATION": f"Bearer {factories.make_token(bank)}"}
    assert client.get(f"{API}/releases", **retrieve_only).status_code == 403


def test_no_ops_answer_200_with_a_flag_and_bad_canaries_422_json(client, bank, review, two):
    again = _post(client, "/releases/publish", review, {"note": "nothing new"})
    assert again.status_code == 200 and again.json()["noop"] is True and "Nothing to publish" in again.json()["message"]
    current = _post(client, "/releases/2/rollback", review)
    assert current.status_code == 200 and current.json()["noop"] is True
    bank.holdout_fraction = 0.6
    bank.save(update_fields=["holdout_fraction"])
    over = _post(client, "/releases/1/canary", review, {"fraction": 0.5})
    assert over.status_code == 422
    assert "add up to 110 %, over 100 %" in over.json()["detail"] and over.json()["code"]
    assert _post(client, "/releases/1/canary", review, {"fraction": "lots"}).status_code == 422
    assert _post(client, "/releases/7/canary", review, {"fraction": 0.1}).status_code == 404
    stop = _post(client, "/releases/canary/stop", review)
    assert stop.status_code == 200 and stop.json()["noop"] is True
    promote = _post(client, "/releases/canary/promote", review)
    assert promote.status_code == 200 and promote.json()["noop"] is True
    ok = _post(client, "/releases/1/canary", review, {"fraction": 0.4})
    assert ok.json() | {"message": ""} == {
        "message": "",
        "noop": False,
        "production": 2,
        "canary": 1,
        "canary_fraction": 0.4,
        "release": None,
    }
    settings = client.put(
        f"{API}/releases/settings", data=json.dumps({"auto_rollback": True}), content_type="application/json", **review
    )
    assert settings.status_code == 200 and "rolled back on its own" in settings.json()["message"]
    bad = client.put(
        f"{API}/releases/settings", data=json.dumps({"mode": "sometimes"}), content_type="application/json", **review
    )
    assert bad.status_code == 422
    assert (
        client.put(f"{API}/releases/settings", data="{}", content_type="application/json", **review).status_code == 422
    )


def test_rollback_through_the_api_changes_what_retrieve_serves_and_its_release_number(client, bank, review, two):
    def served():
        answer = _post(client, "/retrieve", review, {"query": "order history on the shop", "k": 5}).json()
        return {m["title"] for m in answer["items"]}, answer["release"]

    assert served() == ({LOGIN["title"], DATES["title"]}, 2)
    rolled = _post(client, "/releases/1/rollback", review).json()
    assert rolled["noop"] is False and rolled["production"] == 1
    assert served() == ({LOGIN["title"]}, 1)


def test_a_release_exported_from_one_bank_and_imported_into_another_diffs_equal(
    client, bank, owner, review, two, eager_celery, django_capture_on_commit_callbacks
):
    login, _dates = two
    memory_item_edit(item=login, author=owner, content="Sign in first; the orders page needs a session.")
    memory_item_embed_refresh(item_id=login.pk)  # release 3
    exported = client.get(f"{API}/releases/2/export", **review)
    assert exported.status_code == 200 and exported["Content-Type"] == "application/x-ndjson"
    lines = [json.loads(line) for line in b"".join(exported.streaming_content).decode().splitlines()]
    assert lines[0]["release"]["number"] == 2 and lines[0]["release"]["format"] == "reasoningbank.release/1"
    assert {(r["title"], r["content"]) for r in lines[1:]} == {
        (LOGIN["title"], LOGIN["content"]),  # as released, before the edit
        (DATES["title"], DATES["content"]),
    }
    target = factories.make_bank(team=bank.team)
    target_auth = {"HTTP_AUTHORIZATION": f"Bearer {factories.make_token(target, scopes=('review',))}"}
    body = "".join(json.dumps(line) + "\n" for line in lines)

    def imported():  # a worker writes it (eager here): 202, then its status
        with django_capture_on_commit_callbacks(execute=True):
            queued = client.post(
                f"{API}/releases/import", data=body, content_type="application/x-ndjson", **target_auth
            )
        assert queued.status_code == 202, queued.content
        return client.get(queued.json()["status_url"], **target_auth).json()

    first = imported()
    assert first["state"] == "done" and first["release"] == 1 and first["created"] == 2, first
    assert client.get(f"{API}/releases", **target_auth).json()["production"] == 1
    again = imported()
    assert again["state"] == "done" and again["release"] is None and "Nothing to import" in again["message"]

    # The diff of the two: the same items, text for text.
    def texts(b, number):
        versions = release_versions(release=release_get(bank=b, number=number))
        return sorted(MemoryItem.objects.filter(pk__in=versions).values_list("title", "description", "content", "tags"))

    assert texts(target, 1) == sorted((r["title"], r["description"], r["content"], r["tags"]) for r in lines[1:])
    assert MemoryItem.objects.filter(bank=target, status=ItemStatus.APPROVED, origin="import").count() == 2
    for bad, message in (
        ('{"title": "x"}\n', "release header"),
        ('{"release": {"format": "other"}}\n', "release.format"),
        ('{"release": {"format": "reasoningbank.release/1"}}\n{"title": 3}\n', "line 2"),
        ("not json\n", "line 1: not JSON"),
    ):
        refused = client.post(f"{API}/releases/import", data=bad, content_type="application/x-ndjson", **target_auth)
        assert refused.status_code == 422 and message in refused.json()["detail"], refused.content
