"""The account, team, bank, token and audit pages as owner, admin,
reviewer, viewer, another team's member and anonymous."""

import csv
import io
from datetime import timedelta

import pytest
from django.core import mail
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils import timezone

from accounts import services
from accounts.models import ApiToken, AuditEvent, Bank, Invitation, Membership, Role, Team
from tests import factories


@pytest.fixture
def people(team, owner):
    return {
        "owner": owner,
        "admin": factories.make_member(team, Role.ADMIN),
        "reviewer": factories.make_member(team, Role.REVIEWER),
        "viewer": factories.make_member(team, Role.VIEWER),
        "stranger": factories.make_user(),
    }


def team_url(team, name: str = "team") -> str:
    return reverse(f"accounts:{name}", kwargs={"team_id": team.public_id})


def bank_url(bank, name: str) -> str:
    return reverse(f"accounts:{name}", kwargs={"bank_id": bank.public_id})


@pytest.fixture
def as_(client):
    def login(user):
        client.force_login(user)
        return client

    return login


# --- account -------------------------------------------------------------------


def test_signup_logs_in_and_home_lists_teams(client, db):
    response = client.post(
        reverse("accounts:signup"),
        {
            "username": "ada",
            "email": "ada@example.com",
            "password1": "a-long-Passphrase-42",
            "password2": "a-long-Passphrase-42",
        },
    )
    assert response.status_code == 302
    home = client.get("/")
    assert home.status_code == 200 and "not in a team yet" in home.content.decode()


def test_anonymous_home_goes_to_login(client, db):
    response = client.get("/")
    assert response.status_code == 302 and response["Location"].startswith(reverse("accounts:login"))


def test_login_logout(client, db):
    factories.make_user("bob", password="pw-for-tests-only")
    assert client.get(reverse("accounts:login")).status_code == 200
    response = client.post(reverse("accounts:login"), {"username": "bob", "password": "pw-for-tests-only"})
    assert response.status_code == 302 and response["Location"] == "/"
    assert client.post(reverse("accounts:logout")).status_code == 302
    assert client.get("/").status_code == 302


def test_password_reset_sends_a_working_link(client, db):
    user = factories.make_user("carol")
    response = client.post(reverse("accounts:password_reset"), {"email": user.email})
    assert response.status_code == 302
    assert len(mail.outbox) == 1
    link = next(line for line in mail.outbox[0].body.splitlines() if "/accounts/reset/" in line)
    path = link.split("testserver", 1)[1]
    confirm = client.get(path, follow=True)
    assert confirm.status_code == 200 and "Choose a new password" in confirm.content.decode()
    done = client.post(
        confirm.redirect_chain[-1][0], {"new_password1": "Fresh-pass-9876", "new_password2": "Fresh-pass-9876"}
    )
    assert done.status_code == 302
    user.refresh_from_db()
    assert user.check_password("Fresh-pass-9876")


def test_home_shows_only_own_teams_and_links_banks(as_, people, bank, other_bank):
    html = as_(people["viewer"]).get("/").content.decode()
    assert bank.name in html and other_bank.name not in html and other_bank.team.name not in html


# --- teams ----------------------------------------------------------------------------


def test_team_create_makes_owner(as_, people):
    client = as_(people["stranger"])
    response = client.post(reverse("accounts:team_create"), {"name": "New Crew"})
    team = Team.objects.get(name="New Crew")
    assert response.status_code == 302 and Membership.objects.get(team=team, user=people["stranger"]).role == Role.OWNER


@pytest.mark.parametrize(
    "who,status", [("owner", 200), ("admin", 200), ("reviewer", 200), ("viewer", 200), ("stranger", 404)]
)
def test_team_page_access(as_, people, team, who, status):
    assert as_(people[who]).get(reverse("accounts:team", kwargs={"team_id": team.public_id})).status_code == status


def test_team_page_anonymous_redirects(client, team):
    url = reverse("accounts:team", kwargs={"team_id": team.public_id})
    response = client.get(url)
    assert response.status_code == 302 and reverse("accounts:login") in response["Location"]


@pytest.mark.parametrize("who,status", [("reviewer", 403), ("viewer", 403), ("stranger", 404)])
def test_members_managed_by_admins_only(as_, people, team, who, status):
    url = team_url(team, "member_change_role")
    target = Membership.objects.get(team=team, user=people["viewer"])
    response = as_(people[who]).post(url, {"membership": target.pk, "role": "admin"})
    assert response.status_code == status
    assert Membership.objects.get(pk=target.pk).role == Role.VIEWER


def test_admin_changes_role_and_removes_member(as_, people, team):
    client = as_(people["admin"])
    viewer_m = Membership.objects.get(team=team, user=people["viewer"])
    role, remove = team_url(team, "member_change_role"), team_url(team, "member_remove")
    assert client.post(role, {"membership": viewer_m.pk, "role": "reviewer"}).status_code == 302
    assert Membership.objects.get(pk=viewer_m.pk).role == Role.REVIEWER
    assert client.post(remove, {"membership": viewer_m.pk}).status_code == 302
    assert not Membership.objects.filter(pk=viewer_m.pk).exists()


def test_admin_cannot_make_owner_error_is_shown(as_, people, team):
    url = team_url(team, "member_change_role")
    client = as_(people["admin"])
    viewer_m = Membership.objects.get(team=team, user=people["viewer"])
    page = client.post(url, {"membership": viewer_m.pk, "role": "owner"}, follow=True)
    assert "Only owners make owners" in page.content.decode()
    assert Membership.objects.get(pk=viewer_m.pk).role == Role.VIEWER


def test_last_owner_cannot_leave_error_is_shown(as_, people, team):
    page = as_(people["owner"]).post(team_url(team, "team_leave"), follow=True)
    assert "last owner cannot leave" in page.content.decode()
    assert Membership.objects.filter(team=team, user=people["owner"], role=Role.OWNER).exists()
    page = as_(people["owner"]).post(
        team_url(team, "member_change_role"),
        {"membership": Membership.objects.get(team=team, user=people["owner"]).pk, "role": "admin"},
        follow=True,
    )
    assert "last owner cannot be demoted" in page.content.decode()


def test_membership_of_another_team_is_404(as_, people, team, other_bank):
    other_m = Membership.objects.filter(team=other_bank.team).first()
    url = team_url(team, "member_remove")
    assert as_(people["owner"]).post(url, {"membership": other_m.pk}).status_code == 404
    assert Membership.objects.filter(pk=other_m.pk).exists()


# --- invitations -------------------------------------------------------------------------


def _invite(client, team, email="new@example.com", role="reviewer"):
    with_commit = client.post(team_url(team, "team_invite"), {"email": email, "role": role})
    assert with_commit.status_code == 302, with_commit.content
    body = mail.outbox[-1].body
    return next(line.strip() for line in body.splitlines() if "/invitations/" in line).split("testserver", 1)[1]


@pytest.mark.django_db(transaction=True)
def test_invitation_flow_signup_accept_once(client):
    owner = factories.make_user("own")
    team = services.team_create(name="Crew", owner=owner)
    client.force_login(owner)
    link = _invite(client, team)
    client.logout()

    page = client.get(link)
    assert page.status_code == 200 and "Sign up to accept" in page.content.decode()
    assert client.post(link).status_code == 302  # anonymous → login
    joiner = factories.make_user("joiner")
    joiner.email = "new@example.com"  # invitations are bound to the invited address (issue 12)
    joiner.save(update_fields=["email"])
    client.force_login(joiner)
    response = client.post(link)
    assert response.status_code == 302
    assert Membership.objects.get(team=team, user=joiner).role == Role.REVIEWER

    again = client.get(link)
    assert again.status_code == 410 and "already used" in again.content.decode()
    client.force_login(factories.make_user())
    assert client.post(link).status_code == 410


@pytest.mark.django_db(transaction=True)
def test_expired_invitation_shows_clear_page(client):
    owner = factories.make_user("own2")
    team = services.team_create(name="Crew2", owner=owner)
    client.force_login(owner)
    link = _invite(client, team, role="viewer")
    Invitation.objects.update(expires_at=timezone.now() - timedelta(minutes=1))
    client.force_login(factories.make_user())
    page = client.get(link)
    assert page.status_code == 410 and "expired" in page.content.decode()
    assert client.post(link).status_code == 410
    assert Membership.objects.filter(team=team).count() == 1


def test_unknown_invitation_is_404(client, db):
    assert client.get(reverse("accounts:invitation_accept", kwargs={"secret": "nope"})).status_code == 404


def test_invitation_email_is_rendered_from_templates():
    """templates/accounts/email/: the subject (one line) and the body with the
    link on a line of its own, unescaped, as invitation_create sends them."""
    context = {
        "inviter": "o'neil",
        "team": Team(name="R&D <crew>"),
        "role_label": "reviewer",
        "hours": 72,
        "url": "http://testserver/invitations/abc/",
    }
    assert render_to_string("accounts/email/invitation_subject.txt", context) == (
        "o'neil invited you to R&D <crew> on ReasoningBank"
    )
    assert render_to_string("accounts/email/invitation_body.txt", context) == (
        "o'neil invited you to join the team 'R&D <crew>' as reviewer.\n\n"
        "Accept within 72 hours (the link works once):\nhttp://testserver/invitations/abc/\n\n"
        "If you did not expect this, ignore this email."
    )


def test_viewer_cannot_invite(as_, people, team):
    url = team_url(team, "team_invite")
    assert as_(people["viewer"]).post(url, {"email": "x@example.com", "role": "viewer"}).status_code == 403
    assert not Invitation.objects.exists()


# --- banks ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "who,status", [("owner", 302), ("admin", 302), ("reviewer", 403), ("viewer", 403), ("stranger", 404)]
)
def test_bank_create_needs_admin(as_, people, team, who, status):
    url = reverse("accounts:bank_create", kwargs={"team_id": team.public_id})
    response = as_(people[who]).post(url, {"name": "Coding agents", "retrieval_mode": "items", "top_k": 3})
    assert response.status_code == status
    assert Bank.objects.filter(name="Coding agents").exists() == (status == 302)


@pytest.mark.parametrize(
    "who,status", [("owner", 200), ("admin", 200), ("reviewer", 200), ("viewer", 200), ("stranger", 404)]
)
def test_bank_settings_page_access(as_, people, bank, who, status):
    response = as_(people[who]).get(reverse("accounts:bank_settings", kwargs={"bank_id": bank.public_id}))
    assert response.status_code == status
    if who == "viewer":
        assert "admins and owners change them" in response.content.decode()


def _settings_post(**over):
    data = {
        "name": "Web agents",
        "description": "",
        "retrieval_mode": "experiences",
        "top_k": 1,
        "min_similarity": 0.2,
        "duplicate_threshold": 0.95,
        "trust_agent_outcome": "on",
        "reward_threshold": 0.8,
        "judge_model": "judge-x",
        "distill_model": "",
        "holdout_fraction": 0.25,
        "item_holdout_fraction": 0.1,
        "few_shot_max_chars": 4000,
        "rate_limit_per_minute": 120,
    }
    data.update(over)
    return data


def test_admin_saves_settings_and_it_is_audited(as_, people, bank):
    url = reverse("accounts:bank_settings", kwargs={"bank_id": bank.public_id})
    assert as_(people["admin"]).post(url, _settings_post()).status_code == 302
    bank.refresh_from_db()
    assert (
        bank.retrieval_mode,
        bank.top_k,
        bank.trust_agent_outcome,
        bank.holdout_fraction,
        bank.item_holdout_fraction,
        bank.rate_limit_per_minute,
    ) == (
        "experiences",
        1,
        True,
        0.25,
        0.1,
        120,
    )
    event = AuditEvent.objects.get(action="bank.update_settings")
    assert event.actor_user == people["admin"] and event.after["judge_model"] == "judge-x"


def test_invalid_settings_rerender_with_errors(as_, people, bank):
    url = reverse("accounts:bank_settings", kwargs={"bank_id": bank.public_id})
    response = as_(people["owner"]).post(url, _settings_post(top_k=0, holdout_fraction=3, item_holdout_fraction=0.9))
    page = response.content.decode()
    assert response.status_code == 200 and "Between 1 and 20" in page and "Between 0 and 0.5" in page
    bank.refresh_from_db()
    assert bank.top_k == 3


@pytest.mark.parametrize("who,status", [("reviewer", 403), ("viewer", 403), ("stranger", 404)])
def test_settings_and_archive_need_admin(as_, people, bank, who, status):
    url = bank_url(bank, "bank_settings")
    assert as_(people[who]).post(bank_url(bank, "bank_archive")).status_code == status
    assert as_(people[who]).post(url, _settings_post()).status_code == status
    bank.refresh_from_db()
    assert not bank.is_archived and bank.top_k == 3


def test_archive_and_unarchive_from_ui(as_, people, bank):
    url = reverse("accounts:bank_settings", kwargs={"bank_id": bank.public_id})
    client = as_(people["owner"])
    client.post(bank_url(bank, "bank_archive"))
    assert Bank.objects.get(pk=bank.pk).is_archived
    assert "bank_archived" in client.get(url).content.decode()
    client.post(bank_url(bank, "bank_unarchive"))
    assert not Bank.objects.get(pk=bank.pk).is_archived


# --- tokens -----------------------------------------------------------------------------------


def test_create_token_shows_secret_once_with_curl(as_, people, bank):
    url = reverse("accounts:bank_tokens", kwargs={"bank_id": bank.public_id})
    client = as_(people["admin"])
    response = client.post(bank_url(bank, "token_create"), {"name": "web agent", "scopes": ["retrieve", "ingest"]})
    html = response.content.decode()
    token = ApiToken.objects.get(name="web agent")
    secret = response.context["issued"].secret
    assert response.status_code == 200 and secret in html and 'data-copy="token-secret"' in html
    assert f"Bearer {secret}" in html and "/api/v1/retrieve" in html and "/api/v1/trajectories" in html
    assert token.created_by == people["admin"] and token.scopes == ["ingest", "retrieve"]
    assert secret not in client.get(url).content.decode()  # once


def test_token_create_validates(as_, people, bank):
    url = bank_url(bank, "token_create")
    response = as_(people["owner"]).post(url, {"name": "x", "expires_at": "2001-01-01T00:00"})
    assert response.status_code == 200 and "in the future" in response.content.decode()
    assert "This field is required" in response.content.decode()  # no scopes
    assert not ApiToken.objects.filter(name="x").exists()


@pytest.mark.parametrize("who", ["reviewer", "viewer"])
def test_reviewers_and_viewers_see_tokens_without_secrets_or_controls(as_, people, bank, who):
    issued = services.api_token_create(bank=bank, name="visible", scopes=["retrieve"])
    url = reverse("accounts:bank_tokens", kwargs={"bank_id": bank.public_id})
    html = as_(people[who]).get(url).content.decode()
    assert (
        issued.token.prefix in html
        and issued.secret not in html
        and "Create a token" not in html
        and "Revoke" not in html
    )
    create = bank_url(bank, "token_create")
    revoke = reverse("accounts:token_revoke", kwargs={"bank_id": bank.public_id, "token_id": issued.token.public_id})
    assert as_(people[who]).post(create, {"name": "n", "scopes": ["retrieve"]}).status_code == 403
    assert as_(people[who]).post(revoke).status_code == 403
    assert ApiToken.objects.get(pk=issued.token.pk).revoked_at is None


def test_revoke_token_and_other_banks_token_is_404(as_, people, bank, other_bank):
    mine = services.api_token_create(bank=bank, name="mine", scopes=["retrieve"])
    theirs = services.api_token_create(bank=other_bank, name="theirs", scopes=["retrieve"])

    def revoke(token_id) -> str:
        return reverse("accounts:token_revoke", kwargs={"bank_id": bank.public_id, "token_id": token_id})

    client = as_(people["owner"])
    assert client.post(revoke(theirs.token.public_id)).status_code == 404
    assert client.post(bank_url(bank, "bank_tokens") + "not-a-uuid/revoke/").status_code == 404
    assert client.post(revoke(theirs.token.public_id), {"confirm": "1"}).status_code == 404
    assert client.post(revoke(mine.token.public_id), {"confirm": "1"}).status_code == 302
    assert (
        ApiToken.objects.get(pk=mine.token.pk).revoked_at
        and ApiToken.objects.get(pk=theirs.token.pk).revoked_at is None
    )


def test_revoking_a_token_asks_for_confirmation_first(as_, people, bank):
    issued = services.api_token_create(bank=bank, name="shop agent", scopes=["retrieve"])
    url = reverse("accounts:token_revoke", kwargs={"bank_id": bank.public_id, "token_id": issued.token.public_id})
    client = as_(people["admin"])
    tokens = client.get(bank_url(bank, "bank_tokens")).content.decode()
    assert f'action="{url}"' in tokens and "Revoke…" in tokens
    # The tokens page's button only asks: a page that names the token, with the real button focused.
    response = client.post(url)
    html = response.content.decode()
    assert response.status_code == 200 and "Revoke token “shop agent”?" in html
    assert 'name="confirm" value="1"' in html and "autofocus" in html
    assert ApiToken.objects.get(pk=issued.token.pk).revoked_at is None
    response = client.post(url, {"confirm": "1"})
    assert response.status_code == 302 and response["Location"] == bank_url(bank, "bank_tokens")
    assert ApiToken.objects.get(pk=issued.token.pk).revoked_at is not None
    # A revoked token asks nothing again (nothing left to confirm).
    assert client.post(url).status_code == 302


def test_token_list_shows_request_counts_in_bounded_queries(as_, people, bank, django_assert_max_num_queries):
    for n in range(3):
        issued = services.api_token_create(bank=bank, name=f"t{n}", scopes=["retrieve"])
        for _ in range(n + 1):
            services.api_token_hit(token=issued.token, limit=0)
    client = as_(people["viewer"])
    url = reverse("accounts:bank_tokens", kwargs={"bank_id": bank.public_id})
    with django_assert_max_num_queries(8):
        response = client.get(url)
    tokens = {t.name: t for t in response.context["tokens"]}
    assert (tokens["t0"].requests_total, tokens["t2"].requests_total, tokens["t2"].requests_this_minute) == (1, 3, 3)


# --- audit ---------------------------------------------------------------------------------------


@pytest.fixture
def audited(bank, people):
    services.bank_update_settings(bank=bank, actor=people["owner"], top_k=4)
    services.api_token_create(bank=bank, name="=cmd|calc", scopes=["retrieve"], created_by=people["admin"])
    return bank


@pytest.mark.parametrize(
    "who,status", [("owner", 200), ("admin", 200), ("reviewer", 200), ("viewer", 200), ("stranger", 404)]
)
def test_audit_pages_access(as_, people, audited, who, status):
    client = as_(people[who])
    for url in (
        reverse("accounts:bank_audit", kwargs={"bank_id": audited.public_id}),
        reverse("accounts:team_audit", kwargs={"team_id": audited.team.public_id}),
        reverse("accounts:bank_audit_csv", kwargs={"bank_id": audited.public_id}),
        reverse("accounts:team_audit_csv", kwargs={"team_id": audited.team.public_id}),
    ):
        assert client.get(url).status_code == status, url


def test_audit_filters(as_, people, audited):
    url = reverse("accounts:bank_audit", kwargs={"bank_id": audited.public_id})
    client = as_(people["viewer"])
    events = lambda **q: [e.action for e in client.get(url, q).context["page"].object_list]  # noqa: E731
    assert set(events()) == {"bank.create", "bank.update_settings", "token.create"}
    assert events(action="token.create") == ["token.create"]
    assert events(action="bank") == ["bank.update_settings", "bank.create"]
    assert events(actor=people["admin"].username) == ["token.create"]
    assert events(object=str(audited.public_id)) == ["bank.update_settings", "bank.create"]
    tomorrow = (timezone.now() + timedelta(days=1)).date().isoformat()
    assert events(since=tomorrow) == []
    assert len(events(until=tomorrow)) == 3
    assert client.get(url, {"since": "not-a-date"}).status_code == 200


def test_audit_paginates(as_, people, bank):
    for n in range(55):
        services.audit_record(action="test.bulk", bank=bank, user=people["owner"], after={"n": n})
    url = reverse("accounts:bank_audit", kwargs={"bank_id": bank.public_id})
    client = as_(people["owner"])
    first = client.get(url, {"action": "test.bulk"})
    assert len(first.context["page"].object_list) == 50 and "page=2" in first.content.decode()
    second = client.get(url, {"action": "test.bulk", "page": 2})
    assert len(second.context["page"].object_list) == 5
    assert client.get(url, {"page": "zzz"}).status_code == 200


def test_audit_csv_streams_filtered_rows_safely(as_, people, audited, other_bank):
    services.audit_record(action="token.create", bank=other_bank, after={"name": "NOT-OURS"})
    url = reverse("accounts:bank_audit_csv", kwargs={"bank_id": audited.public_id})
    response = as_(people["viewer"]).get(url)
    assert response.streaming and response["Content-Type"].startswith("text/csv")
    rows = list(csv.DictReader(io.StringIO(b"".join(response.streaming_content).decode())))
    assert [r["action"] for r in rows] == ["token.create", "bank.update_settings", "bank.create"]
    settings_row = rows[1]
    assert settings_row["actor"] == people["owner"].username and settings_row["actor_type"] == "user"
    assert '"top_k": 3' in settings_row["before"] and '"top_k": 4' in settings_row["after"]
    assert "NOT-OURS" not in str(rows)
    filtered = as_(people["viewer"]).get(url, {"action": "bank.create"})
    assert [r["action"] for r in csv.DictReader(io.StringIO(b"".join(filtered.streaming_content).decode()))] == [
        "bank.create"
    ]


def test_audit_csv_defuses_spreadsheet_formulas(as_, people, bank):
    services.audit_record(action="=HYPERLINK(1)", bank=bank, after={"n": 1})
    response = as_(people["owner"]).get(reverse("accounts:bank_audit_csv", kwargs={"bank_id": bank.public_id}))
    rows = list(csv.DictReader(io.StringIO(b"".join(response.streaming_content).decode())))
    assert rows[0]["action"] == "'=HYPERLINK(1)"


def test_team_audit_includes_membership_changes(as_, people, team):
    viewer_m = Membership.objects.get(team=team, user=people["viewer"])
    services.membership_change_role(
        membership=viewer_m,
        role=Role.REVIEWER,
        actor=people["owner"],
        actor_membership=Membership.objects.get(team=team, user=people["owner"]),
    )
    page = as_(people["viewer"]).get(reverse("accounts:team_audit", kwargs={"team_id": team.public_id}))
    assert "membership.change_role" in page.content.decode()
