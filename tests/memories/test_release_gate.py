"""The evaluation gate against the real database: under a gate a release reaches agents (production or
canary) only with a passing evaluation; every held move is a 409 that changes nothing; an owner's
override goes through and is audited; going back to a release served before is never held.
ReleaseEvaluation rows are built with the ORM (trajectories.evaluation writes them for real)."""

from __future__ import annotations

import json
import uuid

import pytest
from django.utils import timezone

from accounts.audit.actions import AuditAction
from accounts.models import AuditEvent, Role
from memories.releases.labels import release_canary_set
from memories.releases.models import BankReleasing, EvaluationGate, PublishMode, Release, ReleaseEvaluation
from memories.releases.publishing import release_gate_set, release_mode_set, release_publish
from memories.releases.selectors import RELEASE_FORMAT
from memories.releases.transfer import parse_release_lines, release_import
from memories.review.decisions import memory_item_approve
from reasoningbank_site.errors import Conflict
from tests import factories
from tests.factories import make_done_trajectory, propose_item
from tests.memories.lessons import DATES, LOGIN

API = "/api/v1"
CART = dict(
    title="Check the cart total before paying",
    description="Use before a checkout.",
    content="Compare the cart total with the sum of the item prices; coupons are applied last.",
)


@pytest.fixture
def gated(bank, owner):
    """Releases 1 and 2 (published automatically, 2 is production), then the gate on (not_worse) and a
    third lesson approved: the draft holds it, nothing published."""
    bank.min_similarity = -1.0
    bank.save(update_fields=["min_similarity"])
    trajectory = make_done_trajectory(bank)
    for lesson in (LOGIN, DATES):
        memory_item_approve(item=propose_item(bank, trajectory, **lesson), author=owner, confirm_duplicate=True)
    release_gate_set(bank=bank, gate=EvaluationGate.NOT_WORSE, actor=owner)
    memory_item_approve(item=propose_item(bank, trajectory, **CART), author=owner, confirm_duplicate=True)
    return bank


def _evaluate(release: Release, versus_production: str, versus_control: str = "", *, summary: str = ""):
    """A finished evaluation of ``release`` (or under way when ``versus_production`` is None)."""
    done = versus_production is not None
    return ReleaseEvaluation.objects.create(
        release=release,
        run=uuid.uuid4(),
        passed=None if not done else versus_production in ("better", "no_difference"),
        versus_production=versus_production or "",
        versus_control=versus_control,
        summary=summary,
        finished_at=timezone.now() if done else None,
    )


def _labels(bank) -> tuple:
    """What agents are served and everything a move could change: labels, mode, releases, audit events."""
    releasing = BankReleasing.objects.select_related("production", "canary").get(bank=bank)
    bank.refresh_from_db()
    return (
        releasing.production.number if releasing.production_id else None,
        releasing.canary.number if releasing.canary_id else None,
        releasing.canary_fraction,
        releasing.mode,
        bank.release_production,
        bank.release_canary,
        Release.objects.filter(bank=bank).count(),
        list(Release.objects.filter(bank=bank).order_by("number").values_list("first_served_at", flat=True)),
        AuditEvent.objects.filter(bank=bank).count(),
    )


def _auth(bank, created_by=None) -> dict:
    secret = factories.make_token(bank, scopes=("review", "retrieve"), created_by=created_by)
    return {"HTTP_AUTHORIZATION": f"Bearer {secret}"}


def _post(client, path, auth, body=None):
    return client.post(f"{API}{path}", data=json.dumps(body or {}), content_type="application/json", **auth)


def _candidate(bank, owner) -> Release:
    outcome = release_publish(bank=bank, actor=owner, note="cart lesson")
    assert outcome.candidate and outcome.release.number == 3
    return outcome.release


def test_turning_the_gate_on_stops_automatic_publishing_and_automatic_stays_refused(gated, owner):
    assert BankReleasing.objects.get(bank=gated).mode == PublishMode.MANUAL
    assert Release.objects.filter(bank=gated).count() == 2  # the third approval waits in the draft
    event = AuditEvent.objects.filter(bank=gated, action=AuditAction.RELEASE_SET_EVALUATION_GATE).get()
    assert event.before == {"evaluation_gate": "off", "mode": "automatic"}
    assert event.after == {"evaluation_gate": "not_worse", "mode": "manual"}
    before = _labels(gated)
    with pytest.raises(Conflict) as refused:
        release_mode_set(bank=gated, mode=PublishMode.AUTOMATIC, actor=owner)
    assert refused.value.code == "evaluation_gate_on" and "turn the evaluation gate off" in refused.value.message
    assert _labels(gated) == before


def test_publishing_under_the_gate_writes_a_candidate_that_nobody_is_served(client, gated, owner):
    outcome = release_publish(bank=gated, actor=owner, note="cart lesson")
    assert outcome.candidate and outcome.message == (
        "Release 3 written as a candidate: run an evaluation of it before it reaches agents."
    )
    assert _labels(gated)[:6] == (2, None, 0, "manual", 2, None)
    assert Release.objects.get(bank=gated, number=3).first_served_at is None
    served = client.get(f"{API}/memories", **_auth(gated)).json()
    assert served["release"] == 2 and CART["title"] not in {item["title"] for item in served["items"]}


def test_every_gated_move_is_refused_with_409_and_changes_nothing(client, gated, owner):
    auth = _auth(gated, created_by=owner)
    before = _labels(gated)
    canaried = _post(client, "/releases/publish", auth, {"canary_fraction": 0.2})
    assert canaried.status_code == 409 and canaried.json()["code"] == "evaluation_required"
    assert "a new release has none yet" in canaried.json()["detail"]
    assert _labels(gated) == before  # not even the candidate was written
    candidate = _candidate(gated, owner)
    before = _labels(gated)
    for path, body in (("/releases/3/rollback", {}), ("/releases/3/canary", {"fraction": 0.2})):
        refused = _post(client, path, auth, body)
        assert refused.status_code == 409 and refused.json()["code"] == "evaluation_required", path
        assert refused.json()["detail"].startswith("Release 3 has no evaluation: run one with release 3")
        assert "an owner may override it, with a reason" in refused.json()["detail"]
    assert _labels(gated) == before
    running = _evaluate(candidate, None)
    refused = _post(client, "/releases/3/rollback", auth)
    assert refused.status_code == 409 and f"evaluation {running.run} is still under way" in refused.json()["detail"]
    _evaluate(candidate, "worse", summary="-12 points on 50 tasks")
    refused = _post(client, "/releases/3/canary", auth, {"fraction": 0.2})
    assert refused.status_code == 409
    assert "Release 3's evaluation found it worse than production (-12 points on 50 tasks)." in refused.json()["detail"]
    assert _labels(gated) == before


def test_promoting_a_canary_that_never_passed_is_refused(client, bank, owner):
    """A canary started before the gate was turned on has been served, but never passed: no promotion."""
    bank.min_similarity = -1.0
    bank.save(update_fields=["min_similarity"])
    trajectory = make_done_trajectory(bank)
    for lesson in (LOGIN, DATES):
        memory_item_approve(item=propose_item(bank, trajectory, **lesson), author=owner, confirm_duplicate=True)
    release_canary_set(bank=bank, number=1, fraction=0.3, actor=owner)  # gate off: fine
    release_gate_set(bank=bank, gate=EvaluationGate.NOT_WORSE, actor=owner)
    auth = _auth(bank, created_by=owner)
    before = _labels(bank)
    refused = _post(client, "/releases/canary/promote", auth)
    assert refused.status_code == 409 and refused.json()["code"] == "evaluation_required"
    assert (
        "Release 1 has no evaluation" in refused.json()["detail"]
        and "before a release is promoted" in (refused.json()["detail"])
    )
    assert _labels(bank) == before
    _evaluate(Release.objects.get(bank=bank, number=1), "no_difference")
    promoted = _post(client, "/releases/canary/promote", _auth(bank))
    assert promoted.status_code == 200 and promoted.json()["production"] == 1 and promoted.json()["canary"] is None


def test_a_passing_evaluation_lets_the_candidate_reach_agents(client, gated, owner):
    candidate = _candidate(gated, owner)
    _evaluate(candidate, "worse")
    _evaluate(candidate, "no_difference")  # a later run found no difference: that passes
    canary = _post(client, "/releases/3/canary", _auth(gated), {"fraction": 0.2})
    assert canary.status_code == 200 and canary.json()["canary"] == 3
    assert Release.objects.get(bank=gated, number=3).first_served_at is not None
    gated.refresh_from_db()
    assert gated.release_canary == 3
    assert not AuditEvent.objects.filter(bank=gated, action=AuditAction.RELEASE_OVERRIDE_GATE).exists()


def test_beats_control_needs_a_control_arm_found_worse_than_the_candidate(client, gated, owner):
    release_gate_set(bank=gated, gate=EvaluationGate.BEATS_CONTROL, actor=owner)
    candidate = _candidate(gated, owner)
    auth = _auth(gated)
    _evaluate(candidate, "better")  # no control arm
    refused = _post(client, "/releases/3/rollback", auth)
    assert refused.status_code == 409
    assert (
        "Release 3's evaluation had no same-budget control arm; this bank's gate requires it to be better"
        in (refused.json()["detail"])
    )
    _evaluate(candidate, "better", "no_difference", summary="+2 points against the control")
    refused = _post(client, "/releases/3/rollback", auth)
    assert refused.status_code == 409
    assert (
        "found it no different from the same-budget control (+2 points against the control)"
        in (refused.json()["detail"])
    )
    _evaluate(candidate, "no_difference", "better")
    made = _post(client, "/releases/3/rollback", auth)
    assert made.status_code == 200 and made.json()["production"] == 3


def test_an_owner_overrides_with_a_reason_and_the_override_is_audited(client, gated, owner):
    candidate = _candidate(gated, owner)
    _evaluate(candidate, "worse")
    auth = _auth(gated, created_by=owner)
    before = _labels(gated)
    unexplained = _post(client, "/releases/3/rollback", auth, {"override": True})
    assert unexplained.status_code == 422 and "override_reason" in unexplained.json()["detail"]
    assert _labels(gated) == before
    made = _post(client, "/releases/3/rollback", auth, {"override": True, "override_reason": "hotfix for checkout"})
    assert made.status_code == 200 and made.json()["production"] == 3
    event = AuditEvent.objects.get(bank=gated, action=AuditAction.RELEASE_OVERRIDE_GATE)
    assert event.after["reason"] == "hotfix for checkout" and event.after["release"] == 3
    assert event.after["move"] == "made production" and event.after["gate"] == "not_worse"
    assert [e["state"] for e in event.after["evaluations"]] == ["failed"]
    assert "found it worse than production" in event.after["finding"]
    # Publishing past the gate as an owner: the new release is production at once, audited too.
    memory_item_approve(
        item=propose_item(
            gated,
            make_done_trajectory(gated),
            title="Scroll to load more",
            description="Feeds.",
            content="Infinite lists load more rows when scrolled to the end.",
        ),
        author=owner,
        confirm_duplicate=True,
    )
    published = release_publish(bank=gated, actor=owner, override=True, override_reason="incident fix")
    assert not published.candidate and _labels(gated)[0] == 4
    assert AuditEvent.objects.filter(bank=gated, action=AuditAction.RELEASE_OVERRIDE_GATE).count() == 2


def test_an_override_by_anyone_but_an_owner_is_refused_with_403(client, gated, owner, team):
    _candidate(gated, owner)
    admin = factories.make_member(team, Role.ADMIN)
    tokens = (_auth(gated), _auth(gated, created_by=admin))  # no creator, an admin's token
    before = _labels(gated)
    for auth in tokens:
        refused = _post(client, "/releases/3/rollback", auth, {"override": True, "override_reason": "trust me"})
        assert refused.status_code == 403 and refused.json()["code"] == "owner_required"
    assert _labels(gated) == before


def test_rolling_back_to_a_release_served_before_is_never_gated(client, gated, owner):
    _candidate(gated, owner)
    back = _post(client, "/releases/1/rollback", _auth(gated))
    assert back.status_code == 200 and back.json()["production"] == 1 and back.json()["noop"] is False
    canary = _post(client, "/releases/2/canary", _auth(gated), {"fraction": 0.1})  # served before too
    assert canary.status_code == 200 and canary.json()["canary"] == 2
    assert not AuditEvent.objects.filter(bank=gated, action=AuditAction.RELEASE_OVERRIDE_GATE).exists()


def test_the_api_lists_each_releases_evaluations_and_the_gate(client, gated, owner, team):
    candidate = _candidate(gated, owner)
    worse = _evaluate(candidate, "worse", summary="-12 points")
    listed = client.get(f"{API}/releases", **_auth(gated)).json()
    assert listed["evaluation_gate"] == "not_worse" and listed["mode"] == "manual"
    newest = listed["releases"][0]
    assert newest["number"] == 3 and newest["candidate"] is True and newest["labels"] == []
    assert [(e["run"], e["state"], e["versus_production"], e["summary"]) for e in newest["evaluations"]] == [
        (str(worse.run), "failed", "worse", "-12 points")
    ]
    assert listed["releases"][1]["candidate"] is False and listed["releases"][1]["evaluations"] == []


def test_the_gate_setting_in_the_api_is_for_admins_tokens(client, bank, owner, team, reviewer):
    admin = factories.make_member(team, Role.ADMIN)
    for auth in (_auth(bank), _auth(bank, created_by=reviewer)):
        refused = client.put(
            f"{API}/releases/settings", data='{"evaluation_gate": "off"}', content_type="application/json", **auth
        )
        assert refused.status_code == 403 and refused.json()["code"] == "admin_required"
    bad = client.put(
        f"{API}/releases/settings",
        data='{"evaluation_gate": "maybe"}',
        content_type="application/json",
        **_auth(bank, created_by=admin),
    )
    assert bad.status_code == 422
    on = client.put(
        f"{API}/releases/settings",
        data='{"evaluation_gate": "beats_control"}',
        content_type="application/json",
        **_auth(bank, created_by=admin),
    )
    assert on.status_code == 200 and "better than the same-budget control" in on.json()["message"]
    assert "now publishes by hand" in on.json()["message"]
    releasing = BankReleasing.objects.get(bank=bank)
    assert (releasing.evaluation_gate, releasing.mode) == ("beats_control", "manual")


def test_an_import_under_the_gate_is_written_as_a_candidate(gated, owner):
    lines = [{"release": {"format": RELEASE_FORMAT, "number": 4, "bank": "staging/web"}}, {**CART, "tags": []}]
    records = parse_release_lines("".join(json.dumps(line) + "\n" for line in lines).encode())
    outcome, _ = release_import(bank=gated, records=records, actor=owner)
    assert outcome.candidate and outcome.release.number == 3
    assert outcome.message == "Imported as release 3, a candidate: run an evaluation of it before it reaches agents."
    assert _labels(gated)[:6] == (2, None, 0, "manual", 2, None)


def test_a_settings_request_refused_in_part_changes_nothing(client, bank, owner):
    auth = _auth(bank, created_by=owner)
    both = client.put(
        f"{API}/releases/settings",
        data='{"evaluation_gate": "not_worse", "mode": "automatic"}',
        content_type="application/json",
        **auth,
    )
    assert both.status_code == 409 and both.json()["code"] == "evaluation_gate_on"
    assert not BankReleasing.objects.filter(bank=bank).exclude(evaluation_gate="off").exists()
    assert not AuditEvent.objects.filter(bank=bank, action=AuditAction.RELEASE_SET_EVALUATION_GATE).exists()


def test_a_candidate_with_a_canary_share_is_refused_as_contradictory(client, bank, owner):
    auth = _auth(bank, created_by=owner)
    both = _post(client, "/releases/publish", auth, {"candidate": True, "canary_fraction": 0.2})
    assert both.status_code == 422 and "either a canary share or a candidate" in both.json()["detail"]
    assert not Release.objects.filter(bank=bank).exists()


def test_an_evaluation_with_too_few_known_outcomes_does_not_pass_and_says_so(client, gated, owner):
    candidate = _candidate(gated, owner)
    _evaluate(candidate, "not_enough", summary="Not enough tasks are known yet")
    refused = _post(client, "/releases/3/rollback", _auth(gated))
    assert refused.status_code == 409 and refused.json()["detail"].startswith(
        "Release 3's evaluation had too few tasks with known outcomes to compare it with production "
        "(Not enough tasks are known yet)."
    )
