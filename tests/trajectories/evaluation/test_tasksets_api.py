"""The task-set API: scope review, every bad input a JSON 4xx that saves nothing."""

import json

import pytest
from django.test import Client

from tests.factories import make_token, make_trajectory, record_verdict
from trajectories.evaluation.models import EvalRun, EvalTask, TaskSet
from trajectories.evaluation.taskset_lines import UPLOAD_MAX_BYTES
from trajectories.models import JudgmentSource

pytestmark = pytest.mark.django_db

URL = "/api/v1/task-sets"


@pytest.fixture
def client():
    return Client()


@pytest.fixture
def review(bank):
    return {"HTTP_AUTHORIZATION": f"Bearer {make_token(bank, scopes=('review',))}"}


def upload(client, auth, body, name="quiz", **params):
    query = "&".join(f"{k}={v}" for k, v in {"name": name, **params}.items())
    data = body if isinstance(body, bytes) else "\n".join(json.dumps(r) for r in body).encode()
    return client.post(f"{URL}/upload?{query}", data=data, content_type="application/x-ndjson", **auth)


def test_build_from_reviewed_trajectories_then_list_and_get(client, review, bank, owner):
    trajectory = make_trajectory(bank, task="Book a table", task_id="book-1", status="done")
    record_verdict(trajectory, "success", source=JudgmentSource.HUMAN, author=owner)
    response = client.post(
        URL, {"name": "smoke", "filters": {"outcome": "any"}}, content_type="application/json", **review
    )
    assert response.status_code == 201, response.content
    body = response.json()
    assert body["name"] == "smoke" and body["source"] == "trajectories" and body["task_count"] == 1
    listed = client.get(URL, **review).json()["task_sets"]
    assert [t["id"] for t in listed] == [body["id"]]
    for ref in (body["id"], "smoke"):
        detail = client.get(f"{URL}/{ref}", **review).json()
        assert detail["tasks"] == [
            {
                "id": "book-1",
                "task": "Book a table",
                "metadata": {},
                "check": None,
                "task_id": "book-1",
                "trajectory": str(trajectory.public_id),
            }
        ]
        assert detail["filters"]["outcome"] == ""


def test_upload_then_get_its_tasks(client, review):
    lines = [
        {"id": "q1", "task": "What is 2+2?", "check": {"type": "contains", "value": "4"}},
        {"id": "q2", "task": "Say hi", "metadata": {"lang": "en"}},
    ]
    response = upload(client, review, lines, description="a quiz")
    assert response.status_code == 201, response.content
    assert response.json()["task_count"] == 2 and response.json()["description"] == "a quiz"
    tasks = client.get(f"{URL}/quiz", **review).json()["tasks"]
    assert [t["id"] for t in tasks] == ["q1", "q2"]
    assert tasks[0]["check"] == {"type": "contains", "value": "4", "ignore_case": False}


@pytest.mark.parametrize(
    "body, line",
    [
        (b'{"id": "a", "task": "x"}\n{"id": "a", "task": "y"}', 2),
        (b'{"id": "a"}', 1),
        (b'{"id": "a", "task": "x", "check": {"type": "nope", "value": "x"}}', 1),
        (b'{"id": "a", "task": "x", "check": {"type": "regex", "value": "(["}}', 1),
        (b"not json", 1),
        (b"[1, 2]", 1),
    ],
)
def test_a_bad_upload_is_a_422_naming_its_lines_and_saves_nothing(client, review, body, line):
    response = upload(client, review, body)
    assert response.status_code == 422
    answer = response.json()
    assert answer["code"] == "validation_error" and answer["detail"].startswith("The task set was not saved")
    assert [e["line"] for e in answer["errors"]] == [line] and answer["errors"][0]["message"]
    assert not TaskSet.objects.exists() and not EvalTask.objects.exists()


def test_too_many_tasks_and_too_large_a_body_are_refused(client, review):
    many = [{"id": str(i), "task": "t"} for i in range(2001)]
    response = upload(client, review, many)
    assert response.status_code == 422 and "at most 2,000" in response.json()["detail"]
    response = upload(client, review, b" " * (UPLOAD_MAX_BYTES + 1))
    assert response.status_code == 413 and response.json()["code"] == "payload_too_large"
    assert not TaskSet.objects.exists()


def test_bad_requests_to_build_are_json_4xx(client, review, bank, owner):
    post = lambda payload: client.post(URL, payload, content_type="application/json", **review)  # noqa: E731
    empty = post({"name": "none", "filters": {}})
    assert empty.status_code == 422 and empty.json()["code"] == "no_tasks"
    assert post({"name": "x", "filters": {"limit": 9999}}).status_code == 422
    assert post({"name": "x", "filterz": {}}).status_code == 422
    assert post({"filters": {}}).status_code == 422
    assert client.post(URL, "{", content_type="application/json", **review).status_code == 400
    trajectory = make_trajectory(bank, task="Book a table", status="done")
    record_verdict(trajectory, "success", source=JudgmentSource.HUMAN, author=owner)
    assert post({"name": "taken", "filters": {}}).status_code == 201
    again = post({"name": "taken", "filters": {}})
    assert again.status_code == 409 and again.json()["code"] == "name_taken"
    assert TaskSet.objects.count() == 1
    assert upload(client, review, [{"id": "a", "task": "t"}], name="taken").status_code == 409
    assert upload(client, review, [{"id": "a", "task": "t"}], name="").status_code == 422


def test_delete_is_refused_while_a_run_uses_it(client, review, bank):
    upload(client, review, [{"id": "a", "task": "t"}], name="used")
    upload(client, review, [{"id": "a", "task": "t"}], name="free")
    EvalRun.objects.create(bank=bank, task_set=TaskSet.objects.get(name="used"), k=1)
    refused = client.delete(f"{URL}/used", **review)
    assert refused.status_code == 409 and refused.json()["code"] == "task_set_in_use"
    deleted = client.delete(f"{URL}/free", **review)
    assert deleted.status_code == 200 and deleted.json()["name"] == "free" and deleted.json()["deleted"] is True
    assert list(TaskSet.objects.values_list("name", flat=True)) == ["used"]
    assert client.delete(f"{URL}/free", **review).status_code == 404


def test_scope_and_bank_isolation(client, review, bank, other_bank, auth):
    upload(client, review, [{"id": "a", "task": "t"}], name="mine")
    theirs = {"HTTP_AUTHORIZATION": f"Bearer {make_token(other_bank, scopes=('review',))}"}
    assert client.get(f"{URL}/mine", **theirs).status_code == 404
    assert client.delete(f"{URL}/mine", **theirs).status_code == 404
    assert client.get(URL, **theirs).json() == {"task_sets": []}
    assert client.get(URL, **auth).status_code == 403  # an agent token (retrieve, ingest) does not review
    assert upload(client, auth, [{"id": "b", "task": "t"}], name="agent").status_code == 403
    assert client.get(URL).status_code == 401
    assert TaskSet.objects.count() == 1


@pytest.mark.parametrize(
    "payload",
    [
        {"name": "nul\u0000name", "filters": {}},
        {"name": "x", "description": "d\u0000", "filters": {}},
        {"name": "x", "filters": {"agent": "a\u0000"}},
        {"name": "x", "filters": {"text": "a\u0000"}},
    ],
)
def test_a_nul_character_is_a_422_not_a_500(client, review, payload):
    response = client.post(URL, payload, content_type="application/json", **review)
    assert response.status_code == 422 and "NUL" in response.json()["detail"]
    assert not TaskSet.objects.exists()
