import json
import uuid
from datetime import timedelta

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from accounts.models import ApiToken
from accounts.tokens.services import api_token_revoke
from memories.items.experiences import Experience
from memories.items.models import MemoryItem
from memories.serving.models import RetrievalEvent
from tests import factories
from tests.trajectories.conftest import queued_tasks
from tests.trajectories.payloads import ANTHROPIC_MESSAGES, ANTHROPIC_SYSTEM, NATIVE_STEPS, OPENAI_MESSAGES
from trajectories.judging.verdicts import judgment_record
from trajectories.models import Judgment, Trajectory

URL = "/api/v1/trajectories"
BATCH_URL = "/api/v1/trajectories/batch"


def post(client, body, auth=None, url=URL):
    data = body if isinstance(body, (str, bytes)) else json.dumps(body)
    return client.post(url, data=data, content_type="application/json", **(auth or {}))


def bearer(secret):
    return {"HTTP_AUTHORIZATION": f"Bearer {secret}"}


@pytest.fixture
def client():
    return Client()


# --- round trips of the three shapes ------------------------------------------------


@pytest.mark.parametrize(
    "extra, input_format, kinds",
    [
        ({"messages": OPENAI_MESSAGES}, "openai", ["system", "user", "thought", "tool_call", "tool_result"]),
        (
            {"messages": ANTHROPIC_MESSAGES, "system": ANTHROPIC_SYSTEM},
            "anthropic",
            ["system", "user", "thought", "thought", "tool_call"],
        ),
        ({"steps": NATIVE_STEPS}, "steps", ["thought", "action", "observation", "thought", "tool_call"]),
    ],
)
def test_post_round_trip_normalizes(client, auth, bank, token, extra, input_format, kinds):
    response = post(client, {"task": "  Do the thing  ", "agent": "agent-7", "metadata": {"run": 3}, **extra}, auth)
    assert response.status_code == 202, response.content
    body = response.json()
    assert body["status"] == "received"
    assert body["url"] == f"/api/v1/trajectories/{body['id']}"
    assert body["duplicate"] is False

    trajectory = Trajectory.objects.get(public_id=body["id"])
    assert trajectory.bank == bank
    assert trajectory.token == ApiToken.objects.get(bank=bank)
    assert trajectory.task == "Do the thing"
    assert trajectory.input_format == input_format
    assert [s["kind"] for s in trajectory.steps[:5]] == kinds
    assert trajectory.step_count == len(trajectory.steps)
    # messages: the agent's last text reply is the final answer; native steps: never guessed
    expected_answer = {
        "openai": "The kettle costs 34.50 but is out of stock, so I could not add it.",
        "anthropic": "Fixed the format string; the test passes now.",
        "steps": "",
    }[input_format]
    assert trajectory.final_answer == expected_answer
    assert trajectory.metadata == {"run": 3}

    detail = client.get(body["url"], **auth)
    assert detail.status_code == 200
    assert detail.json()["step_count"] == trajectory.step_count


def test_tool_calls_keep_name_and_arguments(client, auth):
    response = post(client, {"task": "t", "messages": OPENAI_MESSAGES}, auth)
    steps = Trajectory.objects.get(public_id=response.json()["id"]).steps
    calls = [(s["name"], json.loads(s["arguments"])) for s in steps if s["kind"] == "tool_call"]
    assert calls == [
        ("search_catalogue", {"query": "blue kettle"}),
        ("add_to_cart", {"sku": "K-22"}),
        ("view_cart", {}),
    ]


def test_new_trajectory_is_enqueued_after_commit_once(client, auth, django_capture_on_commit_callbacks, broker_queue):
    before = broker_queue.snapshot()
    payload = {"task": "t", "steps": [{"thought": "x"}], "external_id": "e-1"}
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        assert post(client, payload, auth).status_code == 202
    assert len(callbacks) == 1
    pk = Trajectory.objects.get(external_id="e-1").pk
    assert queued_tasks(broker_queue, before) == [("trajectories.process", f"({pk},)")]
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        assert post(client, payload, auth).status_code == 200
    assert callbacks == []
    assert len(queued_tasks(broker_queue, before)) == 1


# --- idempotency ----------------------------------------------------------------------


def test_repeated_external_id_returns_same_id(client, auth, bank, other_bank):
    payload = {"task": "t", "steps": [{"thought": "x"}], "external_id": "run-42"}
    first = post(client, payload, auth)
    again = post(client, {**payload, "task": "changed"}, auth)
    assert first.status_code == 202
    assert again.status_code == 200
    assert again.json()["id"] == first.json()["id"]
    assert again.json()["duplicate"] is True
    assert Trajectory.objects.filter(bank=bank).count() == 1
    # A repeat is answered as one whatever else it carries: an unknown retrieval is not an error, and a
    # known one is not linked again (nothing is stored for a repeat).
    retrieval = RetrievalEvent.objects.create(bank=bank, query="q", mode="items", k=3)
    for extra in (
        {"retrieval_id": str(uuid.uuid4())},
        {"retrieval_id": str(retrieval.public_id), "outcome": "success"},
    ):
        repeat = post(client, {**payload, **extra}, auth)
        assert (repeat.status_code, repeat.json()["id"], repeat.json()["duplicate"]) == (200, first.json()["id"], True)
    retrieval.refresh_from_db()
    assert (retrieval.linked, retrieval.judged) == (0, 0) and not Judgment.objects.filter(
        trajectory__bank=bank
    ).exists()
    assert Trajectory.objects.filter(bank=bank).count() == 1
    # The same external_id in another bank is another trajectory.
    theirs = post(client, payload, bearer(factories.make_token(other_bank)))
    assert theirs.status_code == 202
    assert theirs.json()["id"] != first.json()["id"]


def test_external_id_of_another_token_is_409_without_its_id(client, auth, bank):
    """A second token of the bank replaying an external_id learns neither the run's id nor anything else."""
    payload = {"task": "t", "steps": [{"thought": "x"}], "external_id": "run-7"}
    first = post(client, payload, auth).json()["id"]
    for scopes in (("ingest",), ("retrieve", "ingest"), ("ingest", "review")):
        other = bearer(factories.make_token(bank, scopes=scopes, name="-".join(scopes)))
        replay = post(client, payload, other)
        assert replay.status_code == 409, replay.content
        assert replay.json()["code"] == "external_id_taken"
        assert "already used in this bank by another token" in replay.json()["detail"]
        assert first not in replay.content.decode()
        batch = post(
            client,
            {"trajectories": [payload, {**payload, "external_id": "run-8-" + "-".join(scopes)}]},
            other,
            url=BATCH_URL,
        )
        assert batch.status_code == 200
        results = batch.json()["results"]
        assert results[0] == {
            "index": 0,
            "ok": False,
            "id": None,
            "status": None,
            "duplicate": None,
            "error": {"detail": replay.json()["detail"], "code": "external_id_taken", "errors": None},
        }
        assert results[1]["ok"] is True and batch.json()["accepted"] == 1 and batch.json()["failed"] == 1
        assert first not in batch.content.decode()
    # The token that sent it first still gets its idempotent answer, single and batched.
    assert post(client, payload, auth).json() | {"url": None} == {
        "id": first,
        "status": "received",
        "url": None,
        "duplicate": True,
    }
    assert post(client, {"trajectories": [payload]}, auth, url=BATCH_URL).json()["results"][0]["id"] == first
    assert Trajectory.objects.filter(bank=bank, external_id="run-7").count() == 1


@pytest.mark.parametrize("scopes", [("ingest",), ("retrieve", "ingest")])
def test_a_token_without_review_reaches_only_its_own_runs(client, auth, bank, scopes):
    mine = bearer(factories.make_token(bank, scopes=scopes, name="mine"))
    own = post(client, VALID, mine).json()["id"]
    others = post(client, VALID, auth).json()["id"]
    tokenless = factories.make_trajectory(bank).public_id  # sent by a token since deleted, or made in the UI
    for their_id in (others, tokenless):
        for method in ("get", "delete"):
            response = getattr(client, method)(f"{URL}/{their_id}", **mine)
            assert response.status_code == 404, (method, response.content)
            assert response.json() == {"detail": "No such trajectory in this bank.", "code": "not_found"}
    assert Trajectory.objects.filter(public_id=others).exists()
    assert client.get(f"{URL}/{own}", **mine).status_code == 200
    assert client.delete(f"{URL}/{own}", **mine).status_code == 200


def test_a_review_token_reaches_every_run_of_its_bank(client, auth, bank):
    reviewer = bearer(factories.make_token(bank, scopes=("ingest", "review"), name="review"))
    others = post(client, VALID, auth).json()["id"]
    assert client.get(f"{URL}/{others}", **reviewer).json()["id"] == others
    assert client.delete(f"{URL}/{others}", **reviewer).status_code == 200


# --- auth -----------------------------------------------------------------------------


VALID = {"task": "t", "steps": [{"thought": "x"}]}


def call(client, method, url, headers=None):
    if method == "get":
        return client.get(url, **(headers or {}))
    body = {"trajectories": [VALID]} if url == BATCH_URL else VALID
    return post(client, body, headers, url=url)


@pytest.mark.parametrize("method, url", [("post", URL), ("post", BATCH_URL), ("get", f"{URL}/{uuid.uuid4()}")])
def test_no_token_is_401(client, db, method, url):
    response = call(client, method, url)
    assert response.status_code == 401
    assert response.json()["code"] == "missing_token"


@pytest.mark.parametrize("method, url", [("post", URL), ("post", BATCH_URL), ("get", f"{URL}/{uuid.uuid4()}")])
def test_retrieve_only_token_is_403(client, bank, method, url):
    response = call(client, method, url, bearer(factories.make_token(bank, scopes=("retrieve",))))
    assert response.status_code == 403
    assert response.json()["code"] == "missing_scope"
    assert Trajectory.objects.count() == 0


def test_revoked_and_expired_tokens_are_401(client, bank):
    revoked = factories.make_token(bank, name="revoked")
    api_token_revoke(token=ApiToken.objects.get(name="revoked"))
    expired = factories.make_token(bank, name="expired", expires_at=timezone.now() + timedelta(hours=1))
    ApiToken.objects.filter(name="expired").update(expires_at=timezone.now() - timedelta(seconds=1))
    for secret in (revoked, expired, "rb_not-a-real-token"):
        response = post(client, VALID, bearer(secret))
        assert response.status_code == 401
        assert response.json()["code"] == "invalid_token"
        assert client.get(f"{URL}/{uuid.uuid4()}", **bearer(secret)).status_code == 401
    assert Trajectory.objects.count() == 0


def test_other_banks_trajectory_is_404(client, auth, other_bank):
    theirs = post(client, VALID, bearer(factories.make_token(other_bank))).json()["id"]
    response = client.get(f"{URL}/{theirs}", **auth)
    assert response.status_code == 404
    assert response.json() == {"detail": "No such trajectory in this bank.", "code": "not_found"}


@pytest.mark.parametrize("bad_id", ["not-a-uuid", "123", "%00", "x" * 300])
def test_malformed_id_is_404(client, auth, bad_id):
    response = client.get(f"{URL}/{bad_id}", **auth)
    assert response.status_code == 404
    assert response.json()["code"] == "not_found"


# --- detail -----------------------------------------------------------------------------


def _lookup_queries(client, auth) -> int:
    """Queries of a GET that authenticates and looks one trajectory up (a
    miss): the fixed cost the detail view adds to, whatever auth does."""
    with CaptureQueriesContext(connection) as captured:
        assert client.get(f"{URL}/{uuid.uuid4()}", **auth).status_code == 404
    return len(captured)


def test_detail_shows_judgments_items_and_bounded_queries(
    client, auth, bank, other_bank, django_assert_max_num_queries
):
    body = post(client, {**VALID, "external_id": "x-1", "group_id": "g-1"}, auth).json()
    trajectory = Trajectory.objects.get(public_id=body["id"])
    experience = Experience.objects.create(bank=bank, task="t")
    trajectory.experience = experience
    trajectory.save(update_fields=["experience"])
    judgment_record(
        trajectory=trajectory, source="llm", label="failure", rationale="r1", model="m", prompt_version="judge-v1"
    )
    judgment_record(trajectory=trajectory, source="human", label="success", rationale="looked again")
    items = [
        MemoryItem.objects.create(
            bank=bank, experience=experience, title=f"Item {n}", description="d", content="c", origin="success"
        )
        for n in range(3)
    ]
    MemoryItem.objects.create(bank=other_bank, title="unrelated", description="d", content="c")

    client.get(body["url"], **auth)  # warm: last_used_at written once
    # + judgments, items, supported items, whether the raw record was purged
    with django_assert_max_num_queries(_lookup_queries(client, auth) + 4):
        response = client.get(body["url"], **auth)
    assert response.status_code == 200
    data = response.json()
    assert data["id"] == body["id"]
    assert data["status"] == "received"
    assert data["verdict"] == "success"  # the human judgment wins over the LLM's
    assert [(j["source"], j["label"], j["prompt_version"]) for j in data["judgments"]] == [
        ("llm", "failure", "judge-v1"),
        ("human", "success", ""),
    ]
    assert [i["id"] for i in data["items"]] == [str(i.public_id) for i in items]
    assert data["items"][0] == {
        "id": str(items[0].public_id),
        "title": "Item 0",
        "status": "proposed",
        "origin": "success",
    }
    assert data["external_id"] == "x-1"
    assert data["group_id"] == "g-1"
    assert data["step_count"] == 1


def test_detail_without_experience_has_no_items(client, auth, django_assert_max_num_queries):
    body = post(client, VALID, auth).json()
    client.get(body["url"], **auth)
    with django_assert_max_num_queries(_lookup_queries(client, auth) + 2):  # + judgments, the raw record's presence
        data = client.get(body["url"], **auth).json()
    assert data["items"] == [] and data["judgments"] == [] and data["verdict"] == ""


# --- retrieval link -------------------------------------------------------------------


def _retrieval(bank):
    return RetrievalEvent.objects.create(bank=bank, query="q", mode="items", k=3)


def test_retrieval_id_of_this_bank_is_linked(client, auth, bank):
    event = _retrieval(bank)
    body = post(client, {**VALID, "retrieval_id": str(event.public_id)}, auth).json()
    assert Trajectory.objects.get(public_id=body["id"]).retrieval == event


@pytest.mark.parametrize("which", ["other_bank", "unknown"])
def test_retrieval_id_of_other_bank_or_unknown_is_422(client, auth, other_bank, which):
    rid = _retrieval(other_bank).public_id if which == "other_bank" else uuid.uuid4()
    response = post(client, {**VALID, "retrieval_id": str(rid)}, auth)
    assert response.status_code == 422
    assert response.json()["detail"].startswith(f"retrieval_id: {rid} is not a retrieval of this bank")
    assert Trajectory.objects.count() == 0


# --- outcome signal ------------------------------------------------------------------


def test_trusted_outcome_records_agent_judgment(client, team):
    bank = factories.make_bank(team=team, trust_agent_outcome=True, reward_threshold=0.8)
    auth = bearer(factories.make_token(bank))
    success = post(client, {**VALID, "outcome": "success", "reward": 0.1}, auth).json()  # outcome wins over reward
    by_reward_low = post(client, {**VALID, "reward": 0.79}, auth).json()
    by_reward_at = post(client, {**VALID, "reward": 0.8}, auth).json()
    no_signal = post(client, VALID, auth).json()

    def judged(body):
        trajectory = Trajectory.objects.get(public_id=body["id"])
        return trajectory.verdict, [(j.source, j.label) for j in trajectory.judgments.all()]

    assert judged(success) == ("success", [("agent", "success")])
    assert judged(by_reward_low) == ("failure", [("agent", "failure")])
    assert judged(by_reward_at) == ("success", [("agent", "success")])
    assert judged(no_signal) == ("", [])
    assert client.get(f"{URL}/{success['id']}", **auth).json()["verdict"] == "success"


def test_untrusted_outcome_is_stored_without_judgment(client, auth, bank):
    assert bank.trust_agent_outcome is False
    body = post(client, {**VALID, "outcome": "failure", "reward": 1.0}, auth).json()
    trajectory = Trajectory.objects.get(public_id=body["id"])
    assert (trajectory.outcome, trajectory.reward, trajectory.verdict) == ("failure", 1.0, "")
    assert Judgment.objects.count() == 0


# --- validation and limits ------------------------------------------------------------


@pytest.mark.parametrize(
    "body, status, needle",
    [
        ({"steps": [{"thought": "x"}]}, 422, "task"),
        ({"task": "   ", "steps": [{"thought": "x"}]}, 422, "task"),
        ({"task": 5, "steps": [{"thought": "x"}]}, 422, "task"),
        ({"task": "t"}, 422, "neither was given"),
        ({"task": "t", "steps": [{"thought": "x"}], "messages": [{"role": "user", "content": "x"}]}, 422, "not both"),
        ({"task": "t", "steps": "nope"}, 422, "steps"),
        ({"task": "t", "steps": [{"thought": "x"}], "outcome": "maybe"}, 422, "outcome"),
        ({"task": "t", "steps": [{"thought": "x"}], "reward": "0.5"}, 422, "reward"),
        ({"task": "t", "steps": [{"thought": "x"}], "reward": True}, 422, "reward"),
        ({"task": "t", "steps": [{"thought": "x"}], "retrieval_id": "abc"}, 422, "retrieval_id"),
        ({"task": "t", "steps": [{"thought": "x"}], "group_size": 0}, 422, "group_size"),
        ({"task": "t", "steps": [{"thought": "x"}], "metadata": [1, 2]}, 422, "metadata"),
        ({"task": "t", "steps": [{"thought": "x"}], "stesp": []}, 422, "stesp"),
        ({"task": "t", "steps": [{"thougth": "x"}]}, 422, "steps[0]"),
        ({"task": "t", "messages": [{"role": "user", "content": 5}]}, 422, "messages[0].content"),
        ({"task": "x" * 20_001, "steps": [{"thought": "x"}]}, 422, "20000"),
        ({"task": "t", "steps": [{"thought": "x"}], "external_id": "e" * 201}, 422, "external_id"),
        ({"task": "t", "steps": [{"thought": "x"}], "group_id": "g" * 201}, 422, "group_id"),
        ({"task": "t", "steps": [{"thought": "x"}], "task_id": "g" * 201}, 422, "task_id"),
        ({"task": "t", "steps": [{"thought": "x"}], "agent": "g" * 201}, 422, "agent"),
        ({"task": "t", "steps": [{"thought": "x"}], "metadata": {"blob": "m" * 70_000}}, 422, "65536"),
        ({"task": "t", "steps": [{"observation": "o" * 200_001}]}, 422, "200000"),
        ([VALID], 422, ""),
        ("not json", 400, "not valid JSON"),
        ('{"task": "t", ', 400, "not valid JSON"),
        (b"\xff\xfe\x00garbage", 400, "not valid JSON"),
        ('{"task": "t", "steps": [{"thought": "x"}], "reward": NaN}', 422, "reward"),
        ('{"task": "t", "steps": [{"thought": "x"}], "reward": 1e999}', 422, "reward"),
        ('{"task": "t", "steps": [{"thought": "x"}], "metadata": {"v": NaN}}', 422, "NaN"),
        ("", 422, ""),
        ("null", 422, ""),
        ("123", 422, ""),
        ('"a string"', 422, ""),
        ("{}", 422, "task"),
        ('{"task": "t", "steps": [{"thought": "x"}], "group_size": 1e400}', 422, "group_size"),
        ('{"task": "t", "steps": [{"thought": "x"}], "reward": ' + "9" * 5000 + "}", 400, "not valid JSON"),
    ],
)
def test_bad_input_is_clear_4xx_json(client, auth, body, status, needle):
    response = post(client, body, auth)
    assert response.status_code == status, response.content
    data = response.json()
    assert data["code"] == ("invalid_json" if status == 400 else "validation_error")
    assert needle in data["detail"]
    assert Trajectory.objects.count() == 0


def test_too_many_steps_is_413(client, auth, settings):
    settings.RB_MAX_STEPS = 5
    response = post(client, {"task": "t", "steps": [{"thought": str(n)} for n in range(6)]}, auth)
    assert response.status_code == 413
    assert "RB_MAX_STEPS" in response.json()["detail"]
    # 3 triples fit as input but normalize into 6 steps
    response = post(client, {"task": "t", "steps": [{"thought": "a", "action": "b"}] * 3}, auth)
    assert response.status_code == 413
    assert response.json()["code"] == "too_many_steps"
    assert post(client, {"task": "t", "steps": [{"thought": "a"}] * 5}, auth).status_code == 202


def test_body_over_limit_is_413_before_parsing(client, auth, settings):
    settings.RB_API_MAX_BODY_BYTES = 1000
    response = post(client, {"task": "t", "steps": [{"thought": "x" * 2000}]}, auth)
    assert response.status_code == 413
    assert response.json()["code"] == "payload_too_large"
    assert "RB_API_MAX_BODY_BYTES" in response.json()["detail"]


def test_nul_bytes_and_lone_surrogates_are_stored_not_500(client, auth):
    raw = '{"task": "a\\u0000b", "steps": [{"observation": "bin\\u0000ary \\ud800"}], "metadata": {"k\\u0000": "\\udfff"}}'
    response = post(client, raw, auth)
    assert response.status_code == 202, response.content
    trajectory = Trajectory.objects.get(public_id=response.json()["id"])
    assert trajectory.task == "a\ufffdb"
    assert trajectory.steps[0]["content"] == "bin\ufffdary ?"
    assert trajectory.metadata == {"k\ufffd": "?"}


def test_deeply_nested_json_is_4xx(client, auth):
    deep = "[" * 100_000 + "]" * 100_000
    response = post(client, '{"task": "t", "steps": [{"thought": "x"}], "metadata": {"d": ' + deep + "}}", auth)
    assert response.status_code == 400
    assert response.json()["code"] == "invalid_json"
    nested = "[" * 40 + "]" * 40
    response = post(client, '{"task": "t", "steps": [{"thought": "x"}], "metadata": {"d": ' + nested + "}}", auth)
    assert response.status_code == 422
    assert "nested" in response.json()["detail"]


# --- batch ----------------------------------------------------------------------------


def test_batch_mixed_items(client, auth, bank, other_bank):
    foreign_retrieval = _retrieval(other_bank)
    items = [
        {"task": "good one", "steps": NATIVE_STEPS, "external_id": "b-1"},
        {"task": "", "steps": [{"thought": "x"}]},
        "not an object",
        {"task": "good two", "messages": ANTHROPIC_MESSAGES},
        {"task": "t", "steps": [{"thought": "x"}], "retrieval_id": str(foreign_retrieval.public_id)},
        {"task": "dup of first", "steps": [{"thought": "x"}], "external_id": "b-1"},
        {"task": "t", "messages": [{"role": "robot", "content": "x"}]},
    ]
    response = post(client, {"trajectories": items}, auth, url=BATCH_URL)
    assert response.status_code == 200, response.content
    data = response.json()
    assert (data["accepted"], data["failed"]) == (3, 4)
    results = data["results"]
    assert [r["index"] for r in results] == list(range(7))
    assert [r["ok"] for r in results] == [True, False, False, True, False, True, False]
    assert results[0]["status"] == "received" and results[0]["duplicate"] is False
    assert results[5]["id"] == results[0]["id"] and results[5]["duplicate"] is True
    assert results[1]["error"]["code"] == "validation_error"
    assert results[1]["error"]["errors"][0]["loc"] == ["task"]
    assert "must be an object" in results[2]["error"]["detail"]
    assert "not a retrieval of this bank" in results[4]["error"]["detail"]
    assert "messages[0].role" in results[6]["error"]["detail"]
    stored = Trajectory.objects.filter(bank=bank)
    assert sorted(stored.values_list("task", flat=True)) == ["good one", "good two"]
    assert {str(t.public_id) for t in stored} == {results[0]["id"], results[3]["id"]}


def test_batch_item_over_step_limit_fails_alone(client, auth, settings):
    settings.RB_MAX_STEPS = 2
    items = [{"task": "long", "steps": [{"thought": "x"}] * 3}, VALID]
    data = post(client, {"trajectories": items}, auth, url=BATCH_URL).json()
    assert data["results"][0]["error"]["code"] == "too_many_steps"
    assert data["results"][1]["ok"] is True


def test_batch_limits(client, auth, settings):
    settings.RB_MAX_BATCH = 2
    response = post(client, {"trajectories": [VALID] * 3}, auth, url=BATCH_URL)
    assert response.status_code == 413
    assert "RB_MAX_BATCH" in response.json()["detail"]
    assert post(client, {"trajectories": []}, auth, url=BATCH_URL).status_code == 422
    assert post(client, {"trajectories": "x"}, auth, url=BATCH_URL).status_code == 422
    assert post(client, [VALID], auth, url=BATCH_URL).status_code == 422
    assert Trajectory.objects.count() == 0


def test_openapi_documents_the_endpoints(client, db):
    response = client.get("/api/v1/openapi.json")
    assert response.status_code == 200
    paths = response.json()["paths"]
    assert {"/api/v1/trajectories", "/api/v1/trajectories/batch", "/api/v1/trajectories/{trajectory_id}"} <= set(paths)
