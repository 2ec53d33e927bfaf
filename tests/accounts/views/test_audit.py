"""The audit pages and their CSV download."""

import csv
import io
from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from accounts.audit.services import audit_record
from accounts.models import AuditEvent, Membership, Role
from accounts.teams.banks import bank_update_settings
from accounts.teams.services import membership_change_role
from accounts.tokens.services import api_token_create


@pytest.fixture
def audited(bank, people):
    bank_update_settings(bank=bank, actor=people["owner"], top_k=4)
    api_token_create(bank=bank, name="=cmd|calc", scopes=["retrieve"], created_by=people["admin"])
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


def test_audit_page_names_each_action_for_people(as_, people, audited):
    html = as_(people["viewer"]).get(reverse("accounts:bank_audit", kwargs={"bank_id": audited.public_id})).content
    html = html.decode()
    assert '<option value="bank.update_settings">Bank settings changed</option>' in html  # the filter
    assert '<option value="token.create">API token created</option>' in html
    assert "Bank settings changed<br><code" in html and "Bank created<br><code" in html  # each row, with its name


def test_audit_paginates(as_, people, bank):
    for n in range(55):
        audit_record(action="comment.create", bank=bank, user=people["owner"], after={"n": n})
    url = reverse("accounts:bank_audit", kwargs={"bank_id": bank.public_id})
    client = as_(people["owner"])
    first = client.get(url, {"action": "comment.create"})
    assert len(first.context["page"].object_list) == 50 and "page=2" in first.content.decode()
    second = client.get(url, {"action": "comment.create", "page": 2})
    assert len(second.context["page"].object_list) == 5
    assert client.get(url, {"page": "zzz"}).status_code == 200


def test_audit_csv_streams_filtered_rows_safely(as_, people, audited, other_bank):
    audit_record(action="token.create", bank=other_bank, after={"name": "NOT-OURS"})
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
    # No registered action starts with "=" (audit_record refuses it), but the CSV must not trust its rows either.
    AuditEvent.objects.create(team=bank.team, bank=bank, action="=HYPERLINK(1)", after={"n": 1})
    response = as_(people["owner"]).get(reverse("accounts:bank_audit_csv", kwargs={"bank_id": bank.public_id}))
    rows = list(csv.DictReader(io.StringIO(b"".join(response.streaming_content).decode())))
    assert rows[0]["action"] == "'=HYPERLINK(1)"


def test_team_audit_includes_membership_changes(as_, people, team):
    viewer_m = Membership.objects.get(team=team, user=people["viewer"])
    membership_change_role(
        membership=viewer_m,
        role=Role.REVIEWER,
        actor=people["owner"],
        actor_membership=Membership.objects.get(team=team, user=people["owner"]),
    )
    page = as_(people["viewer"]).get(reverse("accounts:team_audit", kwargs={"team_id": team.public_id}))
    assert "membership.change_role" in page.content.decode()
