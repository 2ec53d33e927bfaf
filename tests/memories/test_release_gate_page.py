"""The evaluation gate on the release pages: each release's evaluations beside its diff and labels,
the gate setting (admins), publishing a candidate, a refused move as a form error, and the owner's
override (403 to anyone else)."""

from __future__ import annotations

import uuid

import pytest
from django.urls import reverse
from django.utils import timezone

from accounts.audit.actions import AuditAction
from accounts.models import AuditEvent, Role
from memories.releases.models import BankReleasing, EvaluationGate, Release, ReleaseEvaluation
from memories.releases.publishing import release_gate_set, release_publish
from memories.review.decisions import memory_item_approve
from tests import factories
from tests.factories import make_done_trajectory, propose_item
from tests.memories.lessons import DATES, LOGIN
from trajectories.evaluation.models import EvalRun, TaskSet, TaskSetSource


@pytest.fixture
def released(bank, owner):
    """Releases 1 and 2 published automatically (2 is production)."""
    trajectory = make_done_trajectory(bank)
    for lesson in (LOGIN, DATES):
        memory_item_approve(item=propose_item(bank, trajectory, **lesson), author=owner, confirm_duplicate=True)
    return bank


def _candidate(bank, owner, title: str = "Check the cart total") -> Release:
    trajectory = make_done_trajectory(bank)
    item = propose_item(bank, trajectory, title=title, description="Use before paying.", content=f"{title} first.")
    memory_item_approve(item=item, author=owner, confirm_duplicate=True)
    return release_publish(bank=bank, actor=owner).release


def _run(bank, *, recorded: int, total: int) -> EvalRun:
    task_set = TaskSet.objects.create(bank=bank, name=f"set {uuid.uuid4().hex[:6]}", source=TaskSetSource.UPLOAD)
    return EvalRun.objects.create(bank=bank, task_set=task_set, k=3, tries_total=total, tries_recorded=recorded)


def _url(bank, release=None) -> str:
    if release is None:
        return reverse("trajectories:releases", kwargs={"bank_id": bank.public_id})
    return reverse("trajectories:release_detail", kwargs={"bank_id": bank.public_id, "release_id": release.public_id})


def test_the_releases_page_shows_each_releases_evaluation_beside_its_labels(client, released, owner, viewer):
    release_gate_set(bank=released, gate=EvaluationGate.NOT_WORSE, actor=owner)
    candidate = _candidate(released, owner)
    running = _run(released, recorded=7, total=30)
    ReleaseEvaluation.objects.create(release=candidate, run=running.public_id)
    two = Release.objects.get(bank=released, number=2)
    finished = _run(released, recorded=30, total=30)
    ReleaseEvaluation.objects.create(
        release=two,
        run=finished.public_id,
        passed=True,
        versus_production="no_difference",
        versus_control="better",
        summary="No difference shown from production; +14 points against the control.",
        finished_at=timezone.now(),
    )
    one = Release.objects.get(bank=released, number=1)
    ReleaseEvaluation.objects.create(
        release=one, run=uuid.uuid4(), passed=False, versus_production="worse", finished_at=timezone.now()
    )
    client.force_login(viewer)
    body = client.get(_url(released)).content.decode()
    assert 'data-evaluation="under_way"' in body and "under way</span> 7/30 tries" in body
    assert str(running.public_id)[:8] in body and str(finished.public_id)[:8] in body
    assert 'data-evaluation="passed"' in body and "vs production: <strong>no difference shown</strong>" in body
    assert "vs control: <strong>better</strong>" in body
    assert 'data-evaluation="failed"' in body and "vs production: <strong>worse</strong>" in body
    assert "data-candidate>candidate</span>" in body and "evaluation required" in body
    detail = client.get(_url(released, two)).content.decode()
    assert "+14 points against the control." in detail and 'data-evaluation="passed"' in detail
    fresh = client.get(_url(released, candidate)).content.decode()
    assert "Release 3 is a candidate: it has never been served." in fresh and "7/30 tries" in fresh
    none = _candidate(released, owner, title="Scroll to the end of long lists")
    assert 'data-evaluation="none"' in client.get(_url(released, none)).content.decode()


def test_an_admin_turns_the_gate_on_from_the_page_and_a_reviewer_may_not(client, released, team, reviewer):
    client.force_login(reviewer)
    assert client.post(_url(released), {"action": "evaluation_gate", "evaluation_gate": "off"}).status_code == 403
    admin = factories.make_member(team, Role.ADMIN)
    client.force_login(admin)
    page = client.post(_url(released), {"action": "evaluation_gate", "evaluation_gate": "not_worse"}, follow=True)
    body = page.content.decode()
    assert "Releases now need a passing evaluation (not worse than production) before they reach agents." in body
    assert "The bank now publishes by hand" in body
    releasing = BankReleasing.objects.get(bank=released)
    assert (releasing.evaluation_gate, releasing.mode) == ("not_worse", "manual")
    assert 'value="not_worse" selected' in body and "Write candidate release" in body


def test_publishing_on_the_page_under_the_gate_writes_a_candidate_and_a_held_move_is_a_form_error(
    client, released, owner, reviewer
):
    release_gate_set(bank=released, gate=EvaluationGate.NOT_WORSE, actor=owner)
    memory_item_approve(
        item=propose_item(released, make_done_trajectory(released), title="Scroll", description="d", content="c"),
        author=owner,
        confirm_duplicate=True,
    )
    client.force_login(reviewer)
    page = client.post(_url(released), {"action": "publish", "note": "scroll"}, follow=True).content.decode()
    assert "Release 3 written as a candidate: run an evaluation of it before it reaches agents." in page
    assert "Evaluate it</a>" in page and 'name="override"' not in page  # only owners see the override
    refused = client.post(_url(released), {"action": "rollback", "number": "3"})
    assert refused.status_code == 200
    assert "Release 3 has no evaluation: run one with release 3 as the candidate." in refused.content.decode()
    assert BankReleasing.objects.get(bank=released).production.number == 2


def test_the_owners_override_on_the_page_is_audited_and_refused_to_a_reviewer(client, released, owner, reviewer):
    release_gate_set(bank=released, gate=EvaluationGate.NOT_WORSE, actor=owner)
    candidate = _candidate(released, owner)
    override = {"action": "rollback", "number": "3", "override": "on", "override_reason": "incident fix"}
    client.force_login(reviewer)
    assert client.post(_url(released), override).status_code == 403
    assert BankReleasing.objects.get(bank=released).production.number == 2
    client.force_login(owner)
    detail = client.get(_url(released, candidate)).content.decode()
    assert 'name="override"' in detail and 'name="override_reason"' in detail
    unexplained = client.post(_url(released), {**override, "override_reason": " "})
    assert "override_reason: say why" in unexplained.content.decode()
    assert BankReleasing.objects.get(bank=released).production.number == 2
    done = client.post(_url(released), override, follow=True)
    assert "Release 3 is production." in done.content.decode()
    event = AuditEvent.objects.get(bank=released, action=AuditAction.RELEASE_OVERRIDE_GATE)
    assert event.actor_user_id == owner.pk and event.after["reason"] == "incident fix"
