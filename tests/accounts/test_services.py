"""Services of teams, members, invitations, banks and tokens against the real
database."""

from datetime import UTC, timedelta

import pytest
from django.core import mail
from django.utils import timezone

from accounts import services
from accounts.models import AuditEvent, Bank, Invitation, Membership, Role
from reasoningbank_site.errors import Invalid
from tests import factories


@pytest.fixture
def owner_m(team, owner):
    return Membership.objects.get(team=team, user=owner)


def test_team_create_makes_creator_owner_and_audits(db):
    user = factories.make_user()
    team = services.team_create(name="Research Lab", owner=user)
    assert team.slug == "research-lab"
    assert Membership.objects.get(team=team, user=user).role == Role.OWNER
    assert list(AuditEvent.objects.filter(team=team).values_list("action", flat=True).order_by("id")) == [
        "team.create",
        "membership.add",
    ]
    # A second team of the same name gets its own slug.
    assert services.team_create(name="Research Lab", owner=user).slug == "research-lab-2"


def test_last_owner_cannot_be_demoted_or_leave(team, owner, owner_m):
    with pytest.raises(services.AccountsError, match="last owner"):
        services.membership_change_role(membership=owner_m, role=Role.ADMIN, actor=owner, actor_membership=owner_m)
    with pytest.raises(services.AccountsError, match="last owner"):
        services.membership_remove(membership=owner_m, actor=owner, actor_membership=owner_m)
    assert Membership.objects.get(pk=owner_m.pk).role == Role.OWNER


def test_second_owner_allows_demotion_and_leaving(team, owner, owner_m):
    other = factories.make_member(team, Role.ADMIN)
    other_m = Membership.objects.get(team=team, user=other)
    services.membership_change_role(membership=other_m, role=Role.OWNER, actor=owner, actor_membership=owner_m)
    services.membership_change_role(membership=owner_m, role=Role.VIEWER, actor=owner, actor_membership=owner_m)
    assert Membership.objects.get(pk=owner_m.pk).role == Role.VIEWER
    event = AuditEvent.objects.filter(action="membership.change_role").first()
    assert event.before == {"user": owner.username, "role": "owner"}
    assert event.after == {"user": owner.username, "role": "viewer"}


def test_only_owners_make_owners_and_admins_cannot_touch_owners(team, owner):
    admin = factories.make_member(team, Role.ADMIN)
    admin_m = Membership.objects.get(team=team, user=admin)
    viewer = factories.make_member(team, Role.VIEWER)
    viewer_m = Membership.objects.get(team=team, user=viewer)
    with pytest.raises(services.AccountsError, match="Only owners"):
        services.membership_change_role(membership=viewer_m, role=Role.OWNER, actor=admin, actor_membership=admin_m)
    owner_m = Membership.objects.get(team=team, user=owner)
    with pytest.raises(services.AccountsError, match="Only owners"):
        services.membership_remove(membership=owner_m, actor=admin, actor_membership=admin_m)
    # Admins do manage lower roles.
    services.membership_change_role(membership=viewer_m, role=Role.REVIEWER, actor=admin, actor_membership=admin_m)
    assert Membership.objects.get(pk=viewer_m.pk).role == Role.REVIEWER
    # Viewers manage nobody, but may leave.
    with pytest.raises(services.AccountsError, match="admins"):
        services.membership_remove(
            membership=admin_m, actor=viewer, actor_membership=Membership.objects.get(pk=viewer_m.pk)
        )
    services.membership_remove(membership=viewer_m, actor=viewer, actor_membership=viewer_m)
    assert not Membership.objects.filter(pk=viewer_m.pk).exists()
    assert AuditEvent.objects.filter(action="membership.leave", team=team).count() == 1


def test_invitation_is_emailed_used_once_and_expires(team, owner, owner_m):
    issued = services.invitation_create(
        team=team,
        email="new@example.com",
        role=Role.REVIEWER,
        actor=owner,
        actor_membership=owner_m,
        site_url="http://testserver",
    )
    # The email goes out on commit; the test transaction never commits, so run the callbacks.
    assert issued.url.startswith("http://testserver/invitations/")
    assert issued.secret not in Invitation.objects.get().token_hash
    joiner = factories.make_user()
    joiner.email = "new@example.com"  # invitations are bound to the invited address
    joiner.save(update_fields=["email"])
    membership = services.invitation_accept(secret=issued.secret, user=joiner)
    assert membership.role == Role.REVIEWER and membership.team == team
    with pytest.raises(services.InvitationError) as used:
        services.invitation_accept(secret=issued.secret, user=factories.make_user())
    assert used.value.reason == "used"

    late = services.invitation_create(
        team=team, email="late@example.com", role=Role.VIEWER, actor=owner, actor_membership=owner_m
    )
    Invitation.objects.filter(pk=late.invitation.pk).update(expires_at=timezone.now() - timedelta(seconds=1))
    with pytest.raises(services.InvitationError) as expired:
        services.invitation_accept(secret=late.secret, user=factories.make_user())
    assert expired.value.reason == "expired"
    with pytest.raises(services.InvitationError) as unknown:
        services.invitation_accept(secret="nope", user=joiner)
    assert unknown.value.reason == "unknown"


def test_invitation_mail_sent_on_commit(team, owner, owner_m, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        issued = services.invitation_create(
            team=team,
            email="mail@example.com",
            role=Role.VIEWER,
            actor=owner,
            actor_membership=owner_m,
            site_url="http://h",
        )
    assert len(mail.outbox) == 1
    assert mail.outbox[0].to == ["mail@example.com"]
    assert issued.url in mail.outbox[0].body


def test_only_owners_invite_owners(team):
    admin = factories.make_member(team, Role.ADMIN)
    admin_m = Membership.objects.get(team=team, user=admin)
    with pytest.raises(services.AccountsError, match="Only owners invite owners"):
        services.invitation_create(
            team=team, email="x@example.com", role=Role.OWNER, actor=admin, actor_membership=admin_m
        )


def test_invitation_never_downgrades_an_existing_member(team, owner, owner_m):
    admin = factories.make_member(team, Role.ADMIN)
    issued = services.invitation_create(
        team=team, email=admin.email, role=Role.VIEWER, actor=owner, actor_membership=owner_m
    )
    assert services.invitation_accept(secret=issued.secret, user=admin).role == Role.ADMIN


def test_bank_settings_update_audits_only_changed_fields(bank, owner):
    services.bank_update_settings(
        bank=bank, actor=owner, top_k=5, min_similarity=bank.min_similarity, holdout_fraction=0.1
    )
    bank.refresh_from_db()
    assert (bank.top_k, bank.holdout_fraction) == (5, 0.1)
    event = AuditEvent.objects.get(action="bank.update_settings")
    assert event.before == {"top_k": 3, "holdout_fraction": 0.0}
    assert event.after == {"top_k": 5, "holdout_fraction": 0.1}
    assert event.actor_user == owner and event.bank == bank


@pytest.mark.parametrize(
    "values",
    [
        {"top_k": 0},
        {"top_k": 21},
        {"holdout_fraction": 1.5},
        {"min_similarity": 2},
        {"retrieval_mode": "nope"},
        {"slug_typo": 1},
        {"rate_limit_per_minute": -1},
    ],
)
def test_bank_settings_reject_bad_values(bank, owner, values):
    with pytest.raises(services.AccountsError):
        services.bank_update_settings(bank=bank, actor=owner, **values)


def test_bank_archive_roundtrip_is_idempotent_and_audited(bank, owner):
    services.bank_archive(bank=bank, actor=owner)
    services.bank_archive(bank=bank, actor=owner)
    assert Bank.objects.get(pk=bank.pk).is_archived
    services.bank_unarchive(bank=bank, actor=owner)
    assert not Bank.objects.get(pk=bank.pk).is_archived
    assert list(AuditEvent.objects.filter(bank=bank).values_list("action", flat=True).order_by("id")) == [
        "bank.create",
        "bank.archive",
        "bank.unarchive",
    ]


def test_token_create_and_revoke_are_audited(bank, owner):
    issued = services.api_token_create(bank=bank, name="agent", scopes=["retrieve"], created_by=owner)
    services.api_token_revoke(token=issued.token, actor=owner)
    services.api_token_revoke(token=issued.token, actor=owner)
    created, revoked = AuditEvent.objects.filter(bank=bank, action__startswith="token.").order_by("id")
    assert created.action == "token.create" and created.after["prefix"] == issued.token.prefix
    assert issued.secret not in str(created.after)
    assert revoked.action == "token.revoke" and revoked.actor_user == owner
    with pytest.raises(Invalid):
        services.api_token_create(
            bank=bank, name="old", scopes=["retrieve"], expires_at=timezone.now() - timedelta(days=1)
        )


def test_audit_record_from_any_service(bank, owner):
    event = services.audit_record(
        action="memory_item.approve",
        bank=bank,
        user=owner,
        obj=bank,
        before={"status": "proposed"},
        after={"status": "approved"},
    )
    assert event.team == bank.team and event.object_id == str(bank.public_id) and event.object_type == "bank"
    with pytest.raises(ValueError):
        services.audit_record(action="x.y")


def test_rate_counter_counts_in_fixed_windows(token, bank):
    from accounts.selectors import api_token_for_secret

    api_token = api_token_for_secret(raw=token)
    t0 = timezone.now().replace(second=5, microsecond=0)
    decisions = [services.api_token_hit(token=api_token, limit=2, now=t0) for _ in range(3)]
    assert [d.count for d in decisions] == [1, 2, 3]
    assert [d.allowed for d in decisions] == [True, True, False]
    assert decisions[-1].retry_after == 55
    # The next minute starts a fresh window.
    assert services.api_token_hit(token=api_token, limit=2, now=t0 + timedelta(minutes=1)).count == 1
    # 0 means no limit.
    assert services.api_token_hit(token=api_token, limit=0, now=t0).allowed


def test_token_usage_compaction_folds_old_minutes_into_days_and_keeps_totals(bank):
    from datetime import datetime, timedelta

    from accounts.models import TokenUsage
    from accounts.selectors import api_token_for_secret
    from accounts.services import token_usage_compact

    token = api_token_for_secret(raw=factories.make_token(bank))
    other = api_token_for_secret(raw=factories.make_token(bank, name="other"))
    now = timezone.now().replace(second=0, microsecond=0)
    day = datetime(2026, 1, 10, tzinfo=UTC)
    rows = [
        TokenUsage(token=token, window_start=day, count=2),  # the day's first minute: the accumulator
        TokenUsage(token=token, window_start=day + timedelta(hours=3, minutes=7), count=5),
        TokenUsage(token=token, window_start=day + timedelta(hours=23, minutes=59), count=1),
        TokenUsage(token=token, window_start=day + timedelta(days=1, minutes=1), count=4),
        TokenUsage(token=other, window_start=day + timedelta(hours=1), count=3),
        TokenUsage(token=token, window_start=now - timedelta(hours=1), count=7),  # recent: kept per minute
    ]
    TokenUsage.objects.bulk_create(rows)

    assert token_usage_compact() == 4
    left = sorted((u.token_id, u.window_start, u.count) for u in TokenUsage.objects.all())
    assert left == sorted(
        [
            (token.pk, day, 8),
            (token.pk, day + timedelta(days=1), 4),
            (other.pk, day, 3),
            (token.pk, now - timedelta(hours=1), 7),
        ]
    )
    assert token_usage_compact() == 0  # idempotent
    assert sum(u.count for u in TokenUsage.objects.filter(token=token)) == 2 + 5 + 1 + 4 + 7
