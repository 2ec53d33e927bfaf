"""Step-level retrieval: later retrievals of a run (``run_id``) share the arm
of its first retrieval, never serve an item twice, are all linked to the
run's trajectory, and the run counts once in the Impact report."""

from __future__ import annotations

import json
import uuid

import pytest
from django.test import Client
from django.urls import reverse

from memories.items.models import MemoryItem
from memories.serving.models import Arm, RetrievalEvent
from memories.serving.upkeep import memory_items_count_served
from tests import factories
from trajectories.impact.report import bank_impact
from trajectories.judging.verdicts import retrieval_outcomes_rebuild
from trajectories.models import Trajectory

RETRIEVE = "/api/v1/retrieve"
LESSONS = [
    ("Sign in before acting", "Use when the task needs an account.", "Log in first and confirm the session."),
    ("Type dates into pickers", "Use when a form has a calendar.", "Typing YYYY-MM-DD beats clicking."),
    ("Filter the orders table", "Use when a list is long.", "Use the table's filter box, not scrolling."),
    ("Export as CSV", "Use when the task asks for a file.", "The export button sits above the table."),
    ("Check the totals", "Use before answering with numbers.", "Add the rows up and compare to the footer."),
    ("Confirm the download", "Use after an export.", "Open the file and check its first line."),
    ("Close dialogs first", "Use when a modal blocks the page.", "Press Escape or the close button."),
    ("Wait for the spinner", "Use after submitting a search.", "Results load late; wait until the spinner stops."),
    ("Read the error banner", "Use when a submit seems ignored.", "Validation messages explain what to fix."),
    ("Paginate to the end", "Use when counting records.", "The first page is not all of them."),
]
OBSERVATIONS = [
    "log into my account and list my orders",
    "the orders page shows a date picker and a long table",
    "the table is filtered; now export the orders as a CSV file",
]
STEPS = [{"thought": "Sign in first", "action": "login()", "observation": "signed in"}]


def _post(client: Client, auth: dict, body: dict):
    return client.post(RETRIEVE, data=json.dumps(body), content_type="application/json", **auth)


def _run(client: Client, auth: dict, observations=OBSERVATIONS, **extra) -> list[dict]:
    """Retrieve once per observation, the later ones in the first one's run."""
    answers: list[dict] = []
    for observation in observations:
        body = {"query": observation, "k": 3, **extra}
        if answers:
            body["run_id"] = answers[0]["run_id"]
        response = _post(client, auth, body)
        assert response.status_code == 200, response.content
        answers.append(response.json())
    return answers


@pytest.fixture
def lessons(bank, approved):
    bank.min_similarity = -1.0  # every lesson is a candidate: the runs below never run dry by chance
    bank.save(update_fields=["min_similarity"])
    return [approved(bank, *lesson) for lesson in LESSONS]


def test_three_retrievals_of_a_run_share_one_arm_serve_nothing_twice_and_link_to_its_trajectory(
    client, auth, bank, lessons
):
    answers = _run(client, auth)
    first = answers[0]["retrieval_id"]
    assert [a["run_id"] for a in answers] == [first] * 3  # the answer says which run it belongs to
    served = [item["id"] for a in answers for item in a["items"]]
    assert len(served) == 9 and len(set(served)) == 9, "no item is served twice in a run"
    events = list(RetrievalEvent.objects.filter(bank=bank).order_by("pk"))
    assert [str(e.public_id) for e in events] == [a["retrieval_id"] for a in answers]
    assert [e.run_id for e in events] == [None, events[0].pk, events[0].pk]
    assert {e.arm for e in events} == {Arm.TREATMENT}

    response = client.post(
        "/api/v1/trajectories",
        data=json.dumps({"task": OBSERVATIONS[0], "steps": STEPS, "retrieval_id": first, "outcome": "success"}),
        content_type="application/json",
        **auth,
    )
    assert response.status_code in (200, 201, 202), response.content
    detail = client.get(f"/api/v1/trajectories/{response.json()['id']}", **auth)
    assert detail.status_code == 200
    assert detail.json()["retrieval_ids"] == [a["retrieval_id"] for a in answers]

    # Every later step's items are counted as served, like a first retrieval's.
    memory_items_count_served()
    assert sorted(MemoryItem.objects.filter(bank=bank, served_count=1).values_list("public_id", flat=True)) == sorted(
        uuid.UUID(i) for i in served
    )


def test_include_served_serves_the_run_s_items_again(client, auth, lessons):
    first, again = _run(client, auth, observations=OBSERVATIONS[:1])[0], None
    again = _post(
        client, auth, {"query": OBSERVATIONS[0], "k": 3, "run_id": first["run_id"], "include_served": True}
    ).json()
    assert [i["id"] for i in again["items"]] == [i["id"] for i in first["items"]]


def test_a_later_step_s_retrieval_id_continues_the_same_run(client, auth, bank, lessons):
    answers = _run(client, auth, observations=OBSERVATIONS[:2])
    third = _post(client, auth, {"query": OBSERVATIONS[2], "k": 3, "run_id": answers[1]["retrieval_id"]}).json()
    assert third["run_id"] == answers[0]["retrieval_id"]
    served = [item["id"] for a in [*answers, third] for item in a["items"]]
    assert len(set(served)) == len(served) == 9


def test_a_holdout_run_stays_holdout_and_a_served_run_stays_served(client, auth, bank, lessons):
    factories.with_holdout(bank, 1.0)
    held = _post(client, auth, {"query": OBSERVATIONS[0], "k": 3}).json()
    factories.with_holdout(bank, 0.0)
    rest = [_post(client, auth, {"query": q, "k": 3, "run_id": held["run_id"]}).json() for q in OBSERVATIONS[1:]]
    assert all(a["items"] == [] and a["system_block"] == "" for a in [held, *rest])
    run = RetrievalEvent.objects.filter(bank=bank).order_by("pk")
    assert [(e.arm, e.holdout_fraction) for e in run] == [(Arm.HOLDOUT, 1.0)] * 3
    # What the holdout would have been served is recorded once per run, as for a served run.
    would_have = [r["id"] for e in run for r in e.results]
    assert len(would_have) == 9 and len(set(would_have)) == 9

    served = _post(client, auth, {"query": OBSERVATIONS[0], "k": 3}).json()
    factories.with_holdout(bank, 1.0)
    later = _post(client, auth, {"query": OBSERVATIONS[1], "k": 3, "run_id": served["run_id"]}).json()
    assert served["items"] and later["items"], "a run that started served stays served"


def test_an_item_left_out_at_one_step_stays_left_out_for_the_run(client, auth, bank, lessons):
    bank.item_holdout_fraction = 1.0
    bank.save(update_fields=["item_holdout_fraction"])
    first = _post(client, auth, {"query": OBSERVATIONS[0], "k": 3}).json()
    assert first["items"] == []
    event = RetrievalEvent.objects.get(public_id=first["retrieval_id"])
    assert len(event.withheld) == 3
    # The run's draw for new candidates is now "never": only the earlier draw can leave an item out.
    RetrievalEvent.objects.filter(pk=event.pk).update(item_holdout_fraction=1e-12)
    again = _post(client, auth, {"query": OBSERVATIONS[0], "k": 5, "run_id": first["run_id"]}).json()
    assert {i["id"] for i in again["items"]}.isdisjoint(event.withheld)
    assert len(again["items"]) == 2  # the other candidates are served
    later = RetrievalEvent.objects.get(public_id=again["retrieval_id"])
    assert sorted(later.withheld) == sorted(event.withheld)


@pytest.mark.parametrize("sent_with", ["first", "last"])
def test_the_impact_report_counts_a_run_once(client, auth, bank, lessons, sent_with):
    bank.trust_agent_outcome = True
    bank.save(update_fields=["trust_agent_outcome"])
    factories.with_holdout(bank, 0.5)
    answers = _run(client, auth)
    linked_to = answers[0 if sent_with == "first" else -1]["retrieval_id"]
    body = {"task": OBSERVATIONS[0], "steps": STEPS, "retrieval_id": linked_to, "outcome": "success"}
    response = client.post("/api/v1/trajectories", data=json.dumps(body), content_type="application/json", **auth)
    assert response.status_code in (200, 201, 202), response.content
    first = RetrievalEvent.objects.get(public_id=answers[0]["retrieval_id"])
    assert Trajectory.objects.get().retrieval_id == first.pk  # a later step's id links the run's first retrieval
    assert (first.linked, first.judged, first.successes) == (1, 1, 1)

    def arm_counts():
        arm = bank_impact(bank=bank).treatment if first.arm == Arm.TREATMENT else bank_impact(bank=bank).holdout
        return arm.retrievals, arm.triggered, arm.reported, arm.judged, arm.successes

    assert arm_counts() == (1, 1, 1, 1, 1)
    retrieval_outcomes_rebuild(bank=bank)
    assert arm_counts() == (1, 1, 1, 1, 1), "a rebuild counts the run once too"


def test_a_batch_linking_two_steps_of_one_run_counts_it_once_per_trajectory(client, auth, bank, lessons):
    answers = _run(client, auth)
    batch = [
        {"task": "a", "steps": STEPS, "retrieval_id": answers[1]["retrieval_id"]},
        {"task": "b", "steps": STEPS, "retrieval_id": answers[2]["retrieval_id"]},
        {"task": "c", "steps": STEPS, "retrieval_id": answers[0]["retrieval_id"]},
    ]
    response = client.post(
        "/api/v1/trajectories/batch",
        data=json.dumps({"trajectories": batch}),
        content_type="application/json",
        **auth,
    )
    assert response.status_code in (200, 201, 202, 207), response.content
    first = RetrievalEvent.objects.get(public_id=answers[0]["retrieval_id"])
    assert first.linked == 3
    assert set(Trajectory.objects.values_list("retrieval_id", flat=True)) == {first.pk}
    assert RetrievalEvent.objects.filter(bank=bank, run__isnull=False, linked__gt=0).count() == 0


# --- bad input ---------------------------------------------------------------------------


def test_another_bank_s_run_is_404_and_logs_nothing(client, auth, bank, other_bank, lessons):
    theirs = _post(client, {"HTTP_AUTHORIZATION": f"Bearer {factories.make_token(other_bank)}"}, {"query": "x"})
    assert theirs.status_code == 200
    before = RetrievalEvent.objects.count()
    for run_id in (theirs.json()["retrieval_id"], str(uuid.uuid4())):
        response = _post(client, auth, {"query": OBSERVATIONS[1], "run_id": run_id})
        assert response.status_code == 404
        assert response["Content-Type"].startswith("application/json")
        assert "run_id" in response.json()["detail"] and "not a retrieval of this bank" in response.json()["detail"]
    assert RetrievalEvent.objects.count() == before


@pytest.mark.parametrize(
    "extra",
    [{"run_id": "not-a-uuid"}, {"run_id": 12}, {"include_served": "maybe"}, {"run": "x"}, {"step": 2}],
)
def test_malformed_run_fields_and_unknown_fields_are_422(client, auth, extra):
    response = _post(client, auth, {"query": OBSERVATIONS[0], **extra})
    assert response.status_code == 422, response.content
    assert response.json()["detail"]


def test_the_trajectory_page_lists_its_run_s_retrievals(client, auth, owner, stranger, bank, lessons):
    answers = _run(client, auth)
    body = {"task": OBSERVATIONS[0], "steps": STEPS, "retrieval_id": answers[0]["retrieval_id"]}
    response = client.post("/api/v1/trajectories", data=json.dumps(body), content_type="application/json", **auth)
    trajectory = Trajectory.objects.get(public_id=response.json()["id"])
    url = reverse("trajectories:detail", kwargs={"bank_id": bank.public_id, "trajectory_id": trajectory.public_id})
    client.force_login(owner)
    page = client.get(url).content.decode()
    assert "Retrievals of this run" in page
    listed = [page.index(f'data-retrieval="{a["retrieval_id"]}"') for a in answers]
    assert listed == sorted(listed), "first one first"
    assert all(o in page for o in OBSERVATIONS)
    client.force_login(stranger)
    assert client.get(url).status_code == 404


@pytest.mark.django_db(transaction=True)
def test_steps_of_one_run_sent_at_once_never_serve_an_item_twice(bank, token, approved):
    """Six later steps of one run, each on its own connection at the same moment: the run's first
    retrieval is locked while a step chooses, so the steps take turns and no item is served twice."""
    import threading

    from django.db import connection

    bank.min_similarity = -1.0
    bank.save(update_fields=["min_similarity"])
    for lesson in LESSONS:
        approved(bank, *lesson)
    auth = {"HTTP_AUTHORIZATION": f"Bearer {token}"}
    first = _post(Client(), auth, {"query": OBSERVATIONS[0], "k": 1}).json()
    start, answers, errors = threading.Barrier(6), [], []

    def step(n: int) -> None:
        try:
            start.wait(timeout=60)
            response = _post(Client(), auth, {"query": OBSERVATIONS[n % 3], "k": 1, "run_id": first["run_id"]})
            answers.append((response.status_code, response.json()))
        except Exception as exc:  # reported by the assertion below
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=step, args=(n,)) for n in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert errors == [] and [status for status, _ in answers] == [200] * 6, (errors, answers)
    served = [item["id"] for item in first["items"]] + [item["id"] for _, a in answers for item in a["items"]]
    assert len(served) == 7 and len(set(served)) == 7, served
    assert RetrievalEvent.objects.filter(bank=bank).count() == 7
