"""The rb_token management command (accounts/management/commands/rb_token.py)."""

import os
import re
import subprocess
import sys

import pytest
from django.conf import settings
from django.core.management.base import CommandError
from django.db import connection

from accounts.models import ApiToken
from tests import factories
from tests.helpers import retrieve, run

TOKEN_RE = re.compile(r"^rb_[A-Za-z0-9_-]{20,}$")


def test_rb_token_create_prints_only_the_token_and_it_works_until_revoked(client, bank):
    out, err = run("rb_token", "create", "--bank", "web-agents", "--scopes", "retrieve", "--name", "ci-agent")
    secret = out.strip()
    assert out.count("\n") == 1 and TOKEN_RE.match(secret), f"stdout must be only the token, got {out!r}"
    assert "ci-agent" in err and "shown once" in err

    token = ApiToken.objects.get(name="ci-agent")
    assert token.bank == bank and token.scopes == ["retrieve"] and token.expires_at is None
    assert secret.startswith(token.prefix)
    assert retrieve(client, secret).status_code == 200

    listing, _ = run("rb_token", "list", "--bank", "acme/web-agents")
    row = next(line for line in listing.splitlines() if line.startswith(token.prefix))
    assert "ci-agent" in row and "retrieve" in row

    _, err = run("rb_token", "revoke", token.prefix)
    assert "Revoked" in err
    response = retrieve(client, secret)
    assert response.status_code == 401
    assert response.json()["code"] == "invalid_token"
    token.refresh_from_db()
    assert token.revoked_at is not None
    revoked_row = next(
        line
        for line in run("rb_token", "list", "--bank", "web-agents")[0].splitlines()
        if line.startswith(token.prefix)
    )
    assert revoked_row.rstrip().endswith(token.revoked_at.strftime("%Y-%m-%d %H:%M"))


def test_rb_token_scopes_are_enforced(client, bank):
    secret = run("rb_token", "create", "--bank", "web-agents", "--scopes", "ingest")[0].strip()
    response = retrieve(client, secret)
    assert response.status_code == 403 and response.json()["code"] == "missing_scope"


def test_rb_token_expiry_and_revoke_by_whole_secret(bank):
    secret = run("rb_token", "create", "--bank", "web-agents", "--scopes", "retrieve,ingest", "--expires-days", "7")[
        0
    ].strip()
    token = ApiToken.objects.get(prefix=secret[:12])
    assert sorted(token.scopes) == ["ingest", "retrieve"]
    assert 6.9 < (token.expires_at - token.created_at).total_seconds() / 86400 < 7.1
    run("rb_token", "revoke", secret)
    token.refresh_from_db()
    assert token.revoked_at is not None
    first = token.revoked_at
    _, err = run("rb_token", "revoke", token.prefix)
    assert "already revoked" in err
    token.refresh_from_db()
    assert token.revoked_at == first


@pytest.mark.parametrize(
    "args, message",
    [
        (["create", "--bank", "nope", "--scopes", "retrieve"], "No bank 'nope'"),
        (["create", "--bank", "acme/nope"], "No bank 'acme/nope'"),
        (["create", "--bank", "web-agents", "--scopes", "retrieve,admin"], "unknown: admin"),
        (["create", "--bank", "web-agents", "--scopes", ","], "Bad --scopes"),
        (["create", "--bank", "web-agents", "--expires-days", "0"], "positive"),
        (["create", "--bank", "web-agents", "--name", "  "], "name"),
        (["list", "--bank", "nope"], "No bank 'nope'"),
        (["revoke", "rb_doesnotexist"], "No token with prefix"),
    ],
)
def test_rb_token_errors_are_clear(bank, args, message):
    with pytest.raises(CommandError, match=re.escape(message)):
        run("rb_token", *args)
    assert not ApiToken.objects.exists()


def test_rb_token_ambiguous_slug_asks_for_the_team(bank):
    factories.make_bank(team=factories.make_team(slug="other"), slug="web-agents")
    with pytest.raises(CommandError, match=r"Several teams .*acme, other.*TEAM/web-agents"):
        run("rb_token", "create", "--bank", "web-agents")
    secret = run("rb_token", "create", "--bank", "other/web-agents")[0].strip()
    assert ApiToken.objects.get(prefix=secret[:12]).bank.team.slug == "other"


@pytest.mark.django_db(transaction=True)
def test_rb_token_stdout_is_shell_capturable(client, bank):
    """`TOKEN=$(manage.py rb_token create …)` in a real process captures the token alone."""
    env = {**os.environ, "RB_DATABASE_NAME": connection.settings_dict["NAME"], "RB_DATA_DIR": str(settings.DATA_DIR)}
    result = subprocess.run(
        [sys.executable, str(settings.BASE_DIR / "manage.py"), "rb_token", "create", "--bank", "acme/web-agents"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert TOKEN_RE.match(result.stdout.strip()) and result.stdout.count("\n") == 1, result.stdout
    assert retrieve(client, result.stdout.strip()).status_code == 200
