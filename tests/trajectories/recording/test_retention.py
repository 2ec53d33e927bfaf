"""Retention (trajectories.records.retention): a bank's step retention purges
the raw record of old finished trajectories. Real database, the UI through
the Django client."""

from datetime import timedelta

import pytest
from django.conf import settings
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from accounts.errors import AccountsInvalid
from accounts.models import AuditEvent
from accounts.teams.banks import bank_update_settings
from memories.items.models import MemoryItem
from tests import factories
from trajectories.judging.verdicts import trajectory_relabel
from trajectories.models import Judgment, Status, Trajectory
from trajectories.otlp.models import TraceSpan
from trajectories.pipeline.tasks import trajectory_steps_purge_task
from trajectories.records.retention import trajectory_steps_purge_expired

URL = "/api/v1/trajectories/{}"


@pytest.fixture
def token(bank):
    """The API reads here are of runs the factories made (sent by no token): only a token with the
    review scope reaches another token's runs."""
    return factories.make_token(bank, scopes=("retrieve", "ingest", "review"))


def _age(trajectory, days):
    Trajectory.objects.filter(pk=trajectory.pk).update(created_at=timezone.now() - timedelta(days=days))


def test_step_retention_days_is_validated_by_the_model(bank, owner):
    with pytest.raises(AccountsInvalid, match="Between 1 and 3,650 days"):
        bank_update_settings(bank=bank, actor=owner, step_retention_days=0)
    bank_update_settings(bank=bank, actor=owner, step_retention_days=30)
    bank.refresh_from_db()
    assert bank.step_retention_days == 30
    event = AuditEvent.objects.filter(bank=bank, action="bank.update_settings").first()
    assert event.after == {"step_retention_days": 30}


def test_settings_form_shows_and_saves_the_retention(client, owner, bank):
    client.force_login(owner)
    url = reverse("accounts:bank_settings", kwargs={"bank_id": bank.public_id})
    page = client.get(url).content.decode()
    assert "Retention" in page and 'name="step_retention_days"' in page
    form = {
        "name": bank.name,
        "retrieval_mode": bank.retrieval_mode,
        "top_k": bank.top_k,
        "min_similarity": bank.min_similarity,
        "duplicate_threshold": bank.duplicate_threshold,
        "reward_threshold": bank.reward_threshold,
        "few_shot_max_chars": bank.few_shot_max_chars,
        "holdout_fraction": 0,
        "item_holdout_fraction": 0,
        "rate_limit_per_minute": 600,
    }
    refused = client.post(url, {**form, "step_retention_days": "5000"})
    assert "Between 1 and 3,650 days" in refused.content.decode()
    bank.refresh_from_db()
    assert bank.step_retention_days is None
    client.post(url, {**form, "step_retention_days": "90"})
    bank.refresh_from_db()
    assert bank.step_retention_days == 90
    client.post(url, {**form, "step_retention_days": ""})
    bank.refresh_from_db()
    assert bank.step_retention_days is None  # empty: keep forever


@pytest.fixture
def retained(bank, owner):
    bank_update_settings(bank=bank, actor=owner, step_retention_days=30)
    bank.refresh_from_db()
    return bank


def test_purge_removes_raw_steps_of_old_finished_trajectories_only(retained, other_bank):
    old_done = factories.make_done_trajectory(retained)
    factories.record_verdict(old_done, "success", rationale="It found the hours.")
    item = factories.propose_item(retained, old_done)
    old_attention = factories.make_trajectory(retained, status=Status.NEEDS_ATTENTION)
    old_judging = factories.make_trajectory(retained, status=Status.JUDGING)
    recent = factories.make_done_trajectory(retained)
    elsewhere = factories.make_done_trajectory(other_bank)  # no retention set
    otlp = factories.make_done_trajectory(retained, external_id="ab" * 16)
    Trajectory.objects.filter(pk=otlp.pk).update(input_format="otlp")
    TraceSpan.objects.create(bank=retained, trace_id="ab" * 16, span_id="1" * 16, span={"name": "late"})
    for t in (old_done, old_attention, old_judging, elsewhere, otlp):
        _age(t, 31)
    _age(recent, 29)

    assert trajectory_steps_purge_expired(batch_size=2) == {retained.pk: 3}

    purged = {t.pk for t in Trajectory.objects.filter(raw__isnull=True)}
    assert purged == {old_done.pk, old_attention.pk, otlp.pk}
    old_done.refresh_from_db()
    assert old_done.steps == [] and old_done.final_answer == "" and old_done.steps_purged_days == 30
    # Kept: the task, verdict, judgments with rationale, step count, items and their link.
    assert old_done.task.startswith("Find the Sunday") and old_done.verdict == "success" and old_done.step_count == 6
    assert Judgment.objects.get(trajectory=old_done).rationale == "It found the hours."
    assert MemoryItem.objects.get(pk=item.pk).experience_id == old_done.experience_id
    for t in (old_judging, recent, elsewhere):
        t.refresh_from_db()
        assert t.steps and t.final_answer and t.steps_purged_at is None and not t.steps_purged
    assert not TraceSpan.objects.filter(bank=retained).exists()
    audit = AuditEvent.objects.filter(action="trajectory.purge_steps")
    assert [(e.bank_id, e.after["count"], e.after["retention_days"]) for e in audit] == [(retained.pk, 3, 30)]

    # Idempotent: a second run purges nothing and audits nothing.
    assert trajectory_steps_purge_task.apply().successful()
    assert AuditEvent.objects.filter(action="trajectory.purge_steps").count() == 1


def test_purge_is_a_beat_task():
    entry = next(e for e in settings.CELERY_BEAT_SCHEDULE.values() if e["task"] == "trajectories.purge_steps")
    assert entry["schedule"] <= 3600


def test_purged_trajectory_page_and_api_say_so(client, auth, owner, retained):
    trajectory = factories.make_done_trajectory(retained)
    _age(trajectory, 40)
    trajectory_steps_purge_expired()
    client.force_login(owner)
    page = client.get(
        reverse("trajectories:detail", kwargs={"bank_id": retained.public_id, "trajectory_id": trajectory.public_id})
    ).content.decode()
    today = timezone.now().strftime("%Y-%m-%d")
    assert f"Steps purged on {today} by the bank's 30-day retention" in page
    assert "Sundays 12:00-17:00" not in page and "Search the library site" not in page
    body = Client().get(URL.format(trajectory.public_id), **auth).json()
    assert body["steps_purged_at"] is not None and body["verdict"] == "success"


def test_relabel_of_a_purged_trajectory_does_not_distill_again(retained, owner):
    trajectory = factories.make_done_trajectory(retained)
    factories.propose_item(retained, trajectory)
    _age(trajectory, 40)
    trajectory_steps_purge_expired()
    trajectory_relabel(trajectory=trajectory, label="failure", reason="Wrong day.", author=owner)
    trajectory.refresh_from_db()
    assert trajectory.verdict == "failure" and trajectory.status == Status.DONE
    assert MemoryItem.objects.get(experience_id=trajectory.experience_id).status == "superseded"
