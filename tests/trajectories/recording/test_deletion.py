"""Deletion (trajectories.records.deletion): a trajectory can be deleted
through the API or the UI. Real database, the API through the test client,
the UI through the Django client."""

import json
import uuid

import pytest
from django.urls import reverse

from accounts.models import AuditEvent, Role
from memories.items.experiences import Experience
from memories.serving.models import RetrievalEvent
from tests import factories
from trajectories.impact.report import bank_impact
from trajectories.judging.verdicts import retrieval_outcomes_rebuild, trajectory_relabel
from trajectories.models import Judgment, Status, Trajectory

URL = "/api/v1/trajectories/{}"


@pytest.fixture
def token(bank):
    """These tests read and delete runs the factories made (sent by no token): only a token with the
    review scope reaches another token's runs."""
    return factories.make_token(bank, scopes=("retrieve", "ingest", "review"))


def _delete(client, trajectory_id, secret):
    return client.delete(URL.format(trajectory_id), HTTP_AUTHORIZATION=f"Bearer {secret}")


def _delete_url(bank, trajectory):
    return reverse("trajectories:delete", kwargs={"bank_id": bank.public_id, "trajectory_id": trajectory.public_id})


def test_api_delete_removes_it_keeps_its_items_and_audits_without_content(client, owner, bank, token):
    trajectory = factories.make_done_trajectory(bank, external_id="run-42", task="Book a flight for Jane Roe")
    factories.record_verdict(trajectory, "success", rationale="Jane Roe got her ticket.")
    item = factories.propose_item(bank, trajectory)
    trajectory_relabel(trajectory=trajectory, label="success", reason="checked", author=owner)
    response = _delete(client, trajectory.public_id, token)
    assert response.status_code == 200
    assert response.json() == {
        "id": str(trajectory.public_id),
        "external_id": "run-42",
        "deleted": True,
        "items_kept": 1,
    }
    assert not Trajectory.objects.filter(pk=trajectory.pk).exists()
    assert not Judgment.objects.filter(trajectory_id=trajectory.pk).exists()
    item.refresh_from_db()
    assert item.status == "proposed" and Experience.objects.filter(pk=item.experience_id).exists()
    event = AuditEvent.objects.get(action="trajectory.delete")
    assert event.actor_token.bank_id == bank.pk and event.object_id == str(trajectory.public_id)
    assert event.before["external_id"] == "run-42"
    # No content in the audit log, not even in the older relabel event.
    dumped = json.dumps([[e.object_repr, e.before, e.after] for e in AuditEvent.objects.filter(bank=bank)])
    assert "Jane Roe" not in dumped and "flight" not in dumped
    # A second delete: 404, with a message.
    again = _delete(client, trajectory.public_id, token)
    assert again.status_code == 404 and again.json()["detail"]

    # The item's pages stay whole: it says where it came from, with no link to the deleted trajectory.
    client.force_login(owner)
    page = client.get(reverse("memories:item_detail", kwargs={"bank_id": bank.public_id, "item_id": item.public_id}))
    assert page.status_code == 200
    html = page.content.decode()
    assert "a deleted trajectory" in html and str(trajectory.public_id) not in html
    focus = client.get(reverse("memories:review_focus", kwargs={"bank_id": bank.public_id, "item_id": item.public_id}))
    assert "Distilled from a deleted trajectory" in focus.content.decode()
    export = client.get(reverse("memories:items_export", kwargs={"bank_id": bank.public_id}))
    assert export.status_code == 200 and "Prefer the official source" in b"".join(export.streaming_content).decode()
    assert client.get(reverse("trajectories:impact", kwargs={"bank_id": bank.public_id})).status_code == 200


def test_api_delete_of_another_bank_or_unknown_or_in_flight(client, bank, token, other_bank):
    theirs = factories.make_done_trajectory(other_bank)
    for tid in (theirs.public_id, uuid.uuid4(), "not-a-uuid"):
        response = _delete(client, tid, token)
        assert response.status_code == 404 and response.json()["code"] == "not_found", tid
    assert Trajectory.objects.filter(pk=theirs.pk).exists()
    busy = factories.make_trajectory(bank, status=Status.DISTILLING)
    response = _delete(client, busy.public_id, token)
    assert response.status_code == 409
    assert response.json()["code"] == "trajectory_in_flight" and "being distilled" in response.json()["detail"]
    assert Trajectory.objects.filter(pk=busy.pk).exists()
    retrieve_only = factories.make_token(bank, scopes=["retrieve"])
    done = factories.make_done_trajectory(bank)
    response = _delete(client, done.public_id, retrieve_only)
    assert response.status_code == 403 and response.json()["code"] == "missing_scope"
    assert Trajectory.objects.filter(pk=done.pk).exists()


def test_api_delete_takes_its_outcome_out_of_the_impact_report(client, bank, token):
    events = factories.make_arm(bank, "treatment", successes=2, failures=1, fraction=0.2)
    factories.make_arm(bank, "holdout", successes=1, fraction=0.2)
    before = bank_impact(bank=bank).treatment
    assert (before.judged, before.successes) == (3, 2)
    gone = Trajectory.objects.get(retrieval=events[0])  # a success
    assert _delete(client, gone.public_id, token).status_code == 200
    after = bank_impact(bank=bank).treatment
    assert (after.judged, after.successes) == (2, 1)
    assert RetrievalEvent.objects.filter(pk=events[0].pk, linked=0, judged=0, successes=0, query="").exists()
    retrieval_outcomes_rebuild(bank=bank)  # the counters agree with a rebuild from the rows
    rebuilt = bank_impact(bank=bank).treatment
    assert (rebuilt.judged, rebuilt.successes) == (2, 1)


def test_deleting_a_matts_member_keeps_the_group_size_and_unused_experiences_go(client, bank, token):
    first = factories.make_trajectory(bank, group_id="g1", group_size=3, status=Status.WAITING_GROUP)
    second = factories.make_trajectory(bank, group_id="g1", status=Status.WAITING_GROUP)
    assert _delete(client, first.public_id, token).status_code == 200
    second.refresh_from_db()
    assert second.group_size == 3
    lone = factories.make_done_trajectory(bank)
    experience = Experience.objects.create(bank=bank, task=lone.task)
    Trajectory.objects.filter(pk=lone.pk).update(experience=experience)
    assert _delete(client, lone.public_id, token).status_code == 200
    assert not Experience.objects.filter(pk=experience.pk).exists()  # no item, no trajectory left


def test_ui_delete_asks_for_confirmation_then_deletes(client, owner, bank):
    trajectory = factories.make_done_trajectory(bank, external_id="run-7")
    factories.propose_item(bank, trajectory)
    client.force_login(owner)
    detail = reverse("trajectories:detail", kwargs={"bank_id": bank.public_id, "trajectory_id": trajectory.public_id})
    assert _delete_url(bank, trajectory) in client.get(detail).content.decode()
    assert client.get(_delete_url(bank, trajectory)).status_code == 405
    confirm = client.post(_delete_url(bank, trajectory))
    assert confirm.status_code == 200
    html = confirm.content.decode()
    assert "Delete this trajectory?" in html and "1 memory item distilled from it stay" in html
    assert Trajectory.objects.filter(pk=trajectory.pk).exists()
    done = client.post(_delete_url(bank, trajectory), {"confirm": "1"}, follow=True)
    assert done.redirect_chain[-1][0] == reverse("trajectories:list", kwargs={"bank_id": bank.public_id})
    assert f"Trajectory {trajectory.public_id} deleted" in done.content.decode()
    assert not Trajectory.objects.filter(pk=trajectory.pk).exists()
    event = AuditEvent.objects.get(action="trajectory.delete")
    assert event.actor_user == owner and event.before["external_id"] == "run-7"


@pytest.mark.parametrize("role", [Role.REVIEWER, Role.VIEWER])
def test_ui_delete_needs_the_admin_role(client, bank, role):
    trajectory = factories.make_done_trajectory(bank)
    client.force_login(factories.make_member(bank.team, role))
    assert client.post(_delete_url(bank, trajectory), {"confirm": "1"}).status_code == 403
    detail = reverse("trajectories:detail", kwargs={"bank_id": bank.public_id, "trajectory_id": trajectory.public_id})
    assert _delete_url(bank, trajectory) not in client.get(detail).content.decode()
    assert Trajectory.objects.filter(pk=trajectory.pk).exists()


def test_ui_delete_of_a_trajectory_in_flight_says_why(client, owner, bank, stranger):
    busy = factories.make_trajectory(bank, status=Status.JUDGING)
    client.force_login(owner)
    response = client.post(_delete_url(bank, busy), {"confirm": "1"})
    assert response.status_code == 409 and "being judged right now" in response.content.decode()
    assert Trajectory.objects.filter(pk=busy.pk).exists()
    client.force_login(stranger)
    assert client.post(_delete_url(bank, busy), {"confirm": "1"}).status_code == 404
