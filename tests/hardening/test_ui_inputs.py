"""Hostile input to the UI: what once answered 500 is a form error, a 404,
or renders."""

from __future__ import annotations

import json

import pytest
from django.core import mail
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from accounts.models import Invitation, Role, Team
from memories.items.models import ItemStatus, MemoryItem
from tests import factories
from tests.factories import make_done_trajectory, propose_item

HTMX = {"HTTP_HX_REQUEST": "true"}


def deep_arguments(depth: int = 5000) -> str:
    return "[" * depth + "]" * depth  # ≈10 KB; json.loads / json.dumps recurse and fail


def deep_list(depth: int) -> list:
    root = current = []
    for _ in range(depth - 1):
        child: list = []
        current.append(child)
        current = child
    return root


@pytest.mark.parametrize("arguments", [deep_arguments(), json.loads('{"a": 1}')])
def test_trajectory_with_deeply_nested_tool_arguments_renders(client, owner, bank, arguments):
    steps = [
        {"index": 0, "kind": "tool_call", "content": "", "name": "deep", "arguments": arguments, "call_id": "c"},
        {
            "index": 1,
            "kind": "observation",
            "content": deep_list(500),
        },  # deeper cannot even be saved (JSONField encodes recursively)
    ]
    trajectory = make_done_trajectory(bank, steps=steps)
    client.force_login(owner)
    kwargs = {"bank_id": bank.public_id, "trajectory_id": trajectory.public_id}
    page = client.get(reverse("trajectories:detail", kwargs=kwargs))
    assert page.status_code == 200
    steps_fragment = client.get(reverse("trajectories:steps", kwargs=kwargs), **HTMX)
    assert steps_fragment.status_code == 200
    assert "deep" in steps_fragment.content.decode()


def test_deep_json_stored_through_the_api_renders(client, owner, bank, auth):
    from trajectories.models import Trajectory

    body = {
        "task": "deep",
        "messages": [
            {"role": "user", "content": "go"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {"id": "c1", "type": "function", "function": {"name": "f", "arguments": deep_arguments()}}
                ],
            },
        ],
    }
    response = client.post("/api/v1/trajectories", data=json.dumps(body), content_type="application/json", **auth)
    assert response.status_code == 202, response.content
    trajectory = Trajectory.objects.get()
    client.force_login(owner)
    kwargs = {"bank_id": bank.public_id, "trajectory_id": trajectory.public_id}
    assert client.get(reverse("trajectories:detail", kwargs=kwargs)).status_code == 200
    assert client.get(reverse("trajectories:steps", kwargs=kwargs), **HTMX).status_code == 200


# --- next= ---------------------------------------------------------------------------------


@pytest.mark.parametrize("target", ["x", "//evil.example/", "https://evil.example/", "/\\evil", "javascript:alert(1)"])
def test_logged_in_signup_with_odd_next_goes_home(client, owner, target):
    client.force_login(owner)
    response = client.get(reverse("accounts:signup"), {"next": target})
    assert response.status_code == 302
    assert response["Location"] == reverse("accounts:home")


def test_anonymous_signup_with_bare_word_next_redirects_home(client, db):
    data = {
        "username": "newbie",
        "email": "newbie@example.com",
        "password1": "a-long-Passphrase-42",
        "password2": "a-long-Passphrase-42",
        "next": "x",
    }
    response = client.post(reverse("accounts:signup"), data)
    assert response.status_code == 302
    assert response["Location"] == reverse("accounts:home")


def test_local_next_is_kept(client, owner):
    client.force_login(owner)
    response = client.get(reverse("accounts:signup"), {"next": "/teams/new/"})
    assert response["Location"] == "/teams/new/"


# --- review actions -------------------------------------------------------------------------


def test_merge_with_nul_in_note_is_a_form_error_not_500(client, owner, bank):
    trajectory = make_done_trajectory(bank)
    item = propose_item(bank, trajectory, title="One")
    into = propose_item(bank, trajectory, title="Two", content="Other content entirely.")
    client.force_login(owner)
    url = reverse("memories:item_merge", kwargs={"bank_id": bank.public_id, "item_id": item.public_id})
    response = client.post(url, {"into": str(into.public_id), "note": "a\x00b"})
    assert response.status_code in (200, 302)
    item.refresh_from_db()
    assert item.status == ItemStatus.PROPOSED  # nothing merged


@pytest.mark.parametrize(
    "content",
    [
        '{"title": "a\\u0000b", "description": "d", "content": "c"}\n',
        '{"title": "a\\ud800b", "description": "d", "content": "c"}\n',
        "[" * 100_000,
        '{"title": ' + "[" * 100_000 + "\n",
    ],
    ids=["nul", "surrogate", "deep-array", "deep-line"],
)
def test_import_hostile_files_never_500(client, owner, bank, content):
    client.force_login(owner)
    url = reverse("memories:items_import", kwargs={"bank_id": bank.public_id})
    upload = SimpleUploadedFile("items.jsonl", content.encode("utf-8", "surrogatepass"), "application/jsonl")
    response = client.post(url, {"file": upload})
    assert response.status_code in (200, 302), response.status_code
    for title in MemoryItem.objects.filter(bank=bank).values_list("title", flat=True):
        assert "\x00" not in title
        title.encode("utf-8")


# --- accounts pages --------------------------------------------------------------------------


@pytest.mark.parametrize("param", ["since", "until"])
@pytest.mark.parametrize("csv", [False, True])
def test_audit_with_year_9999_is_not_500(client, owner, bank, param, csv):
    client.force_login(owner)
    name = "accounts:bank_audit_csv" if csv else "accounts:bank_audit"
    response = client.get(reverse(name, kwargs={"bank_id": bank.public_id}), {param: "9999-12-31"})
    assert response.status_code == 200
    if csv:
        b"".join(response.streaming_content)
    else:
        assert "Pick a date between" in response.content.decode()


MEMBER_ACTIONS = {"role": "accounts:member_change_role", "remove": "accounts:member_remove"}


@pytest.mark.parametrize("membership", ["abc", str(2**70), "-1", ""])
@pytest.mark.parametrize("action", list(MEMBER_ACTIONS))
def test_member_action_with_bad_membership_id_is_404(client, owner, team, membership, action):
    client.force_login(owner)
    url = reverse(MEMBER_ACTIONS[action], kwargs={"team_id": team.public_id})
    response = client.post(url, {"membership": membership, "role": Role.VIEWER})
    assert response.status_code == 404


def test_team_name_with_crlf_is_refused(client, owner):
    client.force_login(owner)
    response = client.post(reverse("accounts:team_create"), {"name": "Evil\r\nBcc: x@example.com"})
    assert response.status_code == 200
    assert "single line" in response.content.decode()
    assert not Team.objects.filter(name__contains="Evil").exists()


@pytest.mark.django_db(transaction=True)
def test_invite_into_team_with_crlf_name_sends_a_one_line_subject(client):
    owner = factories.make_user("crlf-owner")
    team = factories.make_team(owner=owner, slug="crlf")
    Team.objects.filter(pk=team.pk).update(name="Evil\r\nBcc: x@example.com")  # e.g. an older row or the admin
    client.force_login(owner)
    url = reverse("accounts:team_invite", kwargs={"team_id": team.public_id})
    response = client.post(url, {"email": "new@example.com", "role": Role.VIEWER})
    assert response.status_code == 302
    assert Invitation.objects.filter(team=team).count() == 1
    subject = mail.outbox[-1].subject
    assert "\r" not in subject and "\n" not in subject


def test_new_token_page_is_not_cacheable(client, owner, bank):
    client.force_login(owner)
    url = reverse("accounts:token_create", kwargs={"bank_id": bank.public_id})
    response = client.post(url, {"name": "agent", "scopes": ["retrieve"]}, follow=True)  # to the page showing it
    assert response.status_code == 200 and "rb_" in response.content.decode()
    assert "no-store" in response["Cache-Control"]


# --- release numbers, item versions and moments that once answered 500 -------------------------


@pytest.fixture
def released(bank, owner):
    from memories.releases.models import Release
    from memories.review.decisions import memory_item_approve

    item = propose_item(bank, make_done_trajectory(bank))
    memory_item_approve(item=item, author=owner, confirm_duplicate=True)  # release 1
    return Release.objects.get(bank=bank, number=1)


@pytest.mark.parametrize("against", ["²", "١", "1_0"])
def test_a_release_page_compared_with_a_non_number_says_so(client, owner, bank, released, against):
    client.force_login(owner)
    url = reverse("trajectories:release_detail", kwargs={"bank_id": bank.public_id, "release_id": released.public_id})
    page = client.get(url, {"against": against})
    assert page.status_code == 200
    body = page.content.decode()
    assert "is not a release" in body and "Compared with the release before instead" in body


@pytest.mark.parametrize("number", ["²", "١", " 1_0"])
def test_a_release_move_with_a_non_number_is_a_form_error(client, owner, bank, released, number):
    client.force_login(owner)
    url = reverse("trajectories:releases", kwargs={"bank_id": bank.public_id})
    page = client.post(url, {"action": "rollback", "number": number}, follow=True)
    assert page.status_code == 200 and "Choose a release." in page.content.decode()


@pytest.mark.parametrize("seen_version", ["²", "١"])
def test_a_decision_with_a_non_number_item_version_is_not_500(client, owner, bank, seen_version):
    item = propose_item(bank, make_done_trajectory(bank))
    client.force_login(owner)
    url = reverse("memories:item_approve", kwargs={"bank_id": bank.public_id, "item_id": item.public_id})
    response = client.post(url, {"seen_version": seen_version, "confirm_duplicate": "on"})
    assert response.status_code < 500
    item.refresh_from_db()
    assert item.status == ItemStatus.APPROVED  # no version was sent in a form the server can read: no check


UNSTORABLE_FORM_MOMENTS = ["2030-01-01T00:00+16:00", "2030-01-01T00:00-16:00"]


@pytest.mark.parametrize("moment", UNSTORABLE_FORM_MOMENTS)
def test_an_undo_since_moment_that_cannot_be_stored_is_a_form_error(client, owner, bank, moment):
    client.force_login(owner)
    page = client.post(reverse("memories:trust_undo", kwargs={"bank_id": bank.public_id}), {"since": moment})
    assert page.status_code == 200 and "beyond ±15:59" in page.content.decode()


@pytest.mark.parametrize("moment", UNSTORABLE_FORM_MOMENTS)
def test_a_token_expiry_with_an_offset_postgresql_cannot_store_is_a_form_error(client, owner, bank, moment):
    from accounts.models import ApiToken

    client.force_login(owner)
    url = reverse("accounts:token_create", kwargs={"bank_id": bank.public_id})
    page = client.post(url, {"name": "agent", "scopes": ["retrieve"], "expires_at": moment})
    assert page.status_code == 200 and "beyond ±15:59" in page.content.decode()
    assert not ApiToken.objects.filter(bank=bank, name="agent").exists()


def test_a_revert_of_a_decision_named_in_non_ascii_digits_reverts_nothing(client, owner, bank):
    from memories.review.decisions import memory_item_approve

    item = propose_item(bank, make_done_trajectory(bank))
    memory_item_approve(item=item, author=owner, confirm_duplicate=True)
    decision = item.versions.order_by("-number").first().number
    client.force_login(owner)
    url = reverse("memories:item_revert", kwargs={"bank_id": bank.public_id, "item_id": item.public_id})
    page = client.post(url, {"decision": chr(0x0660 + decision)}, follow=True)  # its number in Arabic-Indic digits
    assert page.status_code == 200
    item.refresh_from_db()
    assert item.status == ItemStatus.APPROVED
