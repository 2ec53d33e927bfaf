"""A bank's API tokens: creating (the secret shown once, with the requests its scopes allow, each run here
against the API), who sees what, revoking."""

import html as html_lib
import re
import shlex
from urllib.parse import urlsplit

import pytest
from django.urls import reverse

from accounts.models import ApiToken, Scope
from accounts.tokens.auth import api_token_hit
from accounts.tokens.examples import scope_examples
from accounts.tokens.services import api_token_create
from tests.accounts.views import bank_url


def test_create_token_shows_secret_once_with_curl(as_, people, bank):
    url = reverse("accounts:bank_tokens", kwargs={"bank_id": bank.public_id})
    client = as_(people["admin"])
    response = client.post(bank_url(bank, "token_create"), {"name": "web agent", "scopes": ["retrieve", "ingest"]})
    assert response.status_code == 302 and response["Location"] == url  # post/redirect/get
    response = client.get(url)
    html = response.content.decode()
    token = ApiToken.objects.get(name="web agent")
    secret = response.context["issued"].secret
    assert response.status_code == 200 and secret in html and 'data-copy="token-secret"' in html
    assert "no-store" in response["Cache-Control"]
    assert f"Bearer {secret}" in html and "/api/v1/retrieve" in html and "/api/v1/trajectories" in html
    assert token.created_by == people["admin"] and token.scopes == ["ingest", "retrieve"]
    assert secret not in client.get(url).content.decode()  # once


def _shown_requests(page: str) -> dict[str, dict]:
    """The curl commands of a new token's page, parsed back into requests: ``{pre id: {method, url, headers, body}}``."""
    found = {}
    for pre_id, text in re.findall(r'<pre id="(curl-[a-z-]+)">(.*?)</pre>', page, flags=re.S):
        words = shlex.split(html_lib.unescape(text).replace("\\\n", " "))
        assert words[0] == "curl", words
        request = {"method": "GET", "headers": {}, "body": None}
        rest = iter(words[1:])
        for word in rest:
            if word == "-X":
                request["method"] = next(rest)
            elif word == "-H":
                name, value = next(rest).split(": ", 1)
                request["headers"][name] = value
            elif word == "-d":
                request["body"] = next(rest)
            elif not word.startswith("-"):
                request["url"] = word
        found[pre_id] = request
    return found


AGENT_SCOPES_NOTE = 'id="no-agent-scope"'


@pytest.mark.parametrize(
    ("scopes", "shown"),
    [
        (["retrieve"], ["curl-retrieve", "curl-token"]),
        (["ingest"], ["curl-trajectory", "curl-token"]),
        (["review"], ["curl-review", "curl-token"]),
        (["retrieve", "ingest"], ["curl-retrieve", "curl-trajectory", "curl-token"]),
        (["ingest", "review"], ["curl-trajectory", "curl-review", "curl-token"]),
        (["retrieve", "ingest", "review"], ["curl-retrieve", "curl-trajectory", "curl-review", "curl-token"]),
    ],
)
def test_a_new_tokens_examples_are_the_requests_its_scopes_allow_and_each_one_works(
    as_, people, bank, client, scopes, shown
):
    response = as_(people["admin"]).post(
        bank_url(bank, "token_create"), {"name": "agent", "scopes": scopes}, follow=True
    )
    page = response.content.decode()
    requests = _shown_requests(page)
    secret = response.context["issued"].secret
    client.logout()  # the API alone, as an agent or a script would call it
    for pre_id, request in requests.items():
        url = urlsplit(request["url"])
        assert request["headers"]["Authorization"] == f"Bearer {secret}"
        answer = client.generic(
            request["method"],
            f"{url.path}?{url.query}" if url.query else url.path,
            data=request["body"] or "",
            content_type=request["headers"].get("Content-Type", ""),
            headers={"Authorization": request["headers"]["Authorization"]},
        )
        assert 200 <= answer.status_code < 300, (pre_id, answer.status_code, answer.content[:300])
    assert list(requests) == shown  # every scope granted has its example, and only those
    assert (AGENT_SCOPES_NOTE in page) == (scopes == ["review"])  # no agent scope: it says what it is for


def test_every_scope_has_its_example(bank):
    assert set(scope_examples(bank)) == set(Scope.values)
    assert len({example.name for example in scope_examples(bank).values()}) == len(Scope.values)


def test_a_reload_after_creating_a_token_creates_no_second_one_and_shows_no_secret(as_, people, bank):
    client = as_(people["admin"])
    tokens = bank_url(bank, "bank_tokens")
    response = client.post(bank_url(bank, "token_create"), {"name": "ci", "scopes": ["review"]}, follow=True)
    assert response.redirect_chain == [(tokens, 302)]  # the address bar shows the tokens page, not the form's POST
    secret = response.context["issued"].secret
    assert secret in response.content.decode()
    reload = client.get(tokens)
    assert secret not in reload.content.decode() and reload.context["issued"] is None
    assert ApiToken.objects.filter(bank=bank, name="ci").count() == 1


def test_token_create_validates(as_, people, bank):
    url = bank_url(bank, "token_create")
    response = as_(people["owner"]).post(url, {"name": "x", "expires_at": "2001-01-01T00:00"})
    assert response.status_code == 200 and "in the future" in response.content.decode()
    assert "This field is required" in response.content.decode()  # no scopes
    assert not ApiToken.objects.filter(name="x").exists()


@pytest.mark.parametrize("who", ["reviewer", "viewer"])
def test_reviewers_and_viewers_see_tokens_without_secrets_or_controls(as_, people, bank, who):
    issued = api_token_create(bank=bank, name="visible", scopes=["retrieve"])
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
    mine = api_token_create(bank=bank, name="mine", scopes=["retrieve"])
    theirs = api_token_create(bank=other_bank, name="theirs", scopes=["retrieve"])

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
    issued = api_token_create(bank=bank, name="shop agent", scopes=["retrieve"])
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
        issued = api_token_create(bank=bank, name=f"t{n}", scopes=["retrieve"])
        for _ in range(n + 1):
            api_token_hit(token=issued.token, limit=0)
    client = as_(people["viewer"])
    url = reverse("accounts:bank_tokens", kwargs={"bank_id": bank.public_id})
    with django_assert_max_num_queries(8):
        response = client.get(url)
    tokens = {t.name: t for t in response.context["tokens"]}
    assert (tokens["t0"].requests_total, tokens["t2"].requests_total, tokens["t2"].requests_this_minute) == (1, 3, 3)
