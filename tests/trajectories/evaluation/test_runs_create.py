"""Creating an evaluation run through the API: every try planned and interleaved, arms pinned to their
releases, the candidate's release evaluation, the audit and the webhook; every bad input a clear 4xx
that writes nothing."""

from __future__ import annotations

import pytest

from accounts.models import AuditEvent
from accounts.webhooks.models import WebhookDelivery
from accounts.webhooks.subscriptions import webhook_subscription_create
from memories.releases.labels import release_promote
from memories.releases.models import ReleaseEvaluation
from tests import factories
from tests.trajectories.evaluation.runs_scene import api, make_task_set, releases_scene
from trajectories.evaluation.models import EvalArm, EvalAttempt, EvalRun

pytestmark = pytest.mark.django_db


@pytest.fixture
def scene(bank, owner):
    return releases_scene(bank, owner)


@pytest.fixture
def review_token(bank):
    return factories.make_token(bank, scopes=("review", "ingest", "retrieve"))


def test_a_run_plans_every_try_interleaved_pins_its_arms_and_is_announced(client, scene, review_token, settings):
    settings.RB_WEBHOOK_ALLOW_PRIVATE = True
    webhook_subscription_create(bank=scene.bank, url="http://127.0.0.1:9/hooks", events="evaluation.started")
    task_set = make_task_set(scene.bank)
    status, body = api(
        client,
        review_token,
        "post",
        "/evaluations",
        {
            "task_set": "checkout",
            "arms": ["candidate", "production", "none", "control"],
            "release": scene.candidate,
            "k": 2,
            "token_budget": 4000,
            "note": "Release 2: the dates lesson",
        },
    )
    assert status == 201, body
    run = EvalRun.objects.get()
    assert body["id"] == str(run.public_id) and body["state"] == "open" and body["k"] == 2
    assert body["task_set"] == {"id": str(task_set.public_id), "name": "checkout"}
    assert body["arms"] == [
        {"kind": "candidate", "release": scene.candidate},
        {"kind": "production", "release": scene.production},
        {"kind": "none", "release": None},
        {"kind": "control", "release": None},
    ]
    assert body["token_budget"] == 4000 and body["note"] == "Release 2: the dates lesson"
    assert body["progress"] == {
        "total": 24,
        "recorded": 0,
        "claimed": 0,
        "pending": 24,
        "known": 0,
        "last_activity_at": None,
        "abandoned": False,
    }
    assert body["results"] == {} and body["command"] == f"rb eval run {run.public_id} -- <your agent command>"
    # Claim order: try 1 of every task in every arm before any try 2.
    order = list(EvalAttempt.objects.filter(run=run).order_by("id").values_list("number", "task__key", "arm__kind"))
    assert len(order) == 24 and len(set(order)) == 24
    assert {n for n, _, _ in order[:12]} == {1} and {n for n, _, _ in order[12:]} == {2}
    assert {(key, kind) for _, key, kind in order[:12]} == {(key, kind) for _, key, kind in order[12:]}
    assert [kind for _, _, kind in order[:4]] == ["candidate", "production", "none", "control"]
    evaluation = ReleaseEvaluation.objects.get()
    assert (evaluation.release.number, evaluation.run, evaluation.passed) == (scene.candidate, run.public_id, None)
    audit = AuditEvent.objects.get(action="evaluation.create")
    assert audit.after["tries"] == 24 and audit.actor_token_id is not None
    delivery = WebhookDelivery.objects.get(event="evaluation.started")
    data = delivery.payload["data"]
    assert data["bank"]["id"] == str(scene.bank.public_id)
    assert data["evaluation"]["id"] == str(run.public_id) and data["evaluation"]["tries"] == 24
    assert data["command"] == body["command"]


def test_production_is_pinned_to_the_release_it_served_when_the_run_was_created(client, scene, review_token):
    make_task_set(scene.bank)
    status, body = api(
        client, review_token, "post", "/evaluations", {"task_set": "checkout", "arms": ["production", "none"], "k": 1}
    )
    assert status == 201, body
    release_promote(bank=scene.bank)  # the candidate becomes production after the run was created
    scene.bank.refresh_from_db()
    assert scene.bank.release_production == scene.candidate
    arm = EvalArm.objects.get(kind="production")
    assert arm.release.number == scene.production
    assert not ReleaseEvaluation.objects.exists()  # no candidate arm: no release evaluation


BAD = [
    ({"k": 0}, "invalid_k", "between 1 and 20"),
    ({"k": 21}, "invalid_k", "between 1 and 20"),
    ({"arms": ["candidate", "treatment"]}, "unknown_arm", "'treatment'"),
    ({"arms": ["candidate", "candidate"]}, "duplicate_arm", "more than once"),
    ({"arms": ["candidate"]}, "too_few_arms", "at least two"),
    ({"release": None}, "no_release", "needs the number"),
    ({"release": 99}, "unknown_release", "no release 99"),
    ({"arms": ["production", "none"], "release": 2}, "no_candidate", "only the candidate"),
    ({"task_set": "nope"}, "unknown_task_set", "'nope'"),
    ({"task_set": "empty"}, "empty_task_set", "no tasks"),
    ({"token_budget": 0}, "validation_error", "token_budget"),
    ({"note": "x" * 501}, "validation_error", "at most 500"),
]


@pytest.mark.parametrize(("change", "code", "words"), BAD, ids=[b[1] + "-" + str(i) for i, b in enumerate(BAD)])
def test_every_bad_input_is_a_clear_422_and_writes_nothing(client, scene, review_token, change, code, words):
    make_task_set(scene.bank)
    make_task_set(scene.bank, name="empty", tasks=[])
    audits = AuditEvent.objects.count()
    body = {"task_set": "checkout", "arms": ["candidate", "production"], "release": scene.candidate, "k": 3, **change}
    status, answer = api(client, review_token, "post", "/evaluations", body)
    assert (status, answer["code"]) == (422, code), answer
    assert words in answer["detail"]
    assert not EvalRun.objects.exists() and not EvalAttempt.objects.exists() and not EvalArm.objects.exists()
    assert not ReleaseEvaluation.objects.exists() and AuditEvent.objects.count() == audits


def test_too_many_tries_and_a_bank_without_production_are_refused(client, bank, review_token, settings):
    make_task_set(bank)
    status, answer = api(
        client, review_token, "post", "/evaluations", {"task_set": "checkout", "arms": ["production", "none"], "k": 1}
    )
    assert (status, answer["code"]) == (422, "no_production_release"), answer
    settings.RB_EVAL_MAX_TRIES = 17
    status, answer = api(
        client, review_token, "post", "/evaluations", {"task_set": "checkout", "arms": ["none", "control"], "k": 3}
    )
    assert (status, answer["code"]) == (422, "too_many_tries"), answer
    assert "18 tries" in answer["detail"] and "RB_EVAL_MAX_TRIES" in answer["detail"]
    assert not EvalRun.objects.exists()


def test_scopes_and_banks(client, bank, other_bank, review_token):
    make_task_set(bank)
    ingest_only = factories.make_token(bank, scopes=("ingest",))
    body = {"task_set": "checkout", "arms": ["none", "control"], "k": 1}
    status, answer = api(client, ingest_only, "post", "/evaluations", body)
    assert (status, answer["code"]) == (403, "missing_scope")
    status, created = api(client, review_token, "post", "/evaluations", body)
    assert status == 201
    status, read = api(client, ingest_only, "get", f"/evaluations/{created['id']}")
    assert status == 200 and read["id"] == created["id"]  # any live token of the bank reads a run
    theirs = factories.make_token(other_bank, scopes=("review", "ingest"))
    for method, path in (("get", ""), ("post", "/next"), ("post", "/cancel")):
        status, answer = api(client, theirs, method, f"/evaluations/{created['id']}{path}")
        assert (status, answer["code"]) == (404, "not_found"), (path, answer)
    status, answer = api(client, theirs, "post", "/evaluations", {**body})
    assert (status, answer["code"]) == (422, "unknown_task_set")  # another bank's set is not found
    status, answer = api(client, review_token, "get", "/evaluations/not-a-uuid")
    assert status == 404
    assert client.get(f"/api/v1/evaluations/{created['id']}").status_code == 401


def test_the_list_is_newest_first_without_results_in_a_fixed_number_of_queries(
    client, bank, review_token, django_assert_max_num_queries
):
    make_task_set(bank)
    for _ in range(3):
        assert (
            api(
                client,
                review_token,
                "post",
                "/evaluations",
                {"task_set": "checkout", "arms": ["none", "control"], "k": 1},
            )[0]
            == 201
        )
    with django_assert_max_num_queries(8):
        status, body = api(client, review_token, "get", "/evaluations")
    assert status == 200 and len(body["evaluations"]) == 3
    runs = list(EvalRun.objects.order_by("-created_at").values_list("public_id", flat=True))
    assert [e["id"] for e in body["evaluations"]] == [str(r) for r in runs]
    assert all("results" not in e and e["progress"]["total"] == 6 for e in body["evaluations"])
