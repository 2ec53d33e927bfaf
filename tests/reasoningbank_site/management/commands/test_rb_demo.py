"""rb_demo: a team, a bank, a token and memories to try, made once and kept."""

import stat

from django.contrib.auth import get_user_model

from accounts.models import ApiToken, Bank, Membership, Team
from memories.items.models import MemoryItem
from reasoningbank_site.demo import DEMO_ITEMS, DEMO_QUERY, DEMO_TRAJECTORIES
from tests import factories
from tests.helpers import retrieve, run
from trajectories.models import Trajectory


def _counts() -> dict:
    return {
        "users": get_user_model().objects.count(),
        "teams": Team.objects.count(),
        "memberships": Membership.objects.count(),
        "banks": Bank.objects.count(),
        "tokens": ApiToken.objects.count(),
        "live_tokens": ApiToken.objects.filter(revoked_at__isnull=True).count(),
        "trajectories": Trajectory.objects.count(),
        "items": MemoryItem.objects.count(),
    }


def test_rb_demo_is_idempotent_and_serves_its_token_and_memories(db, client, tmp_path):
    token_file = tmp_path / "demo-token.txt"
    out, _ = run("rb_demo", "--token-file", str(token_file))
    assert "LOCAL DEMO" in out
    first = _counts()
    secret = token_file.read_text().strip()
    assert stat.S_IMODE(token_file.stat().st_mode) == 0o600

    assert first == {
        "users": 1,
        "teams": 1,
        "memberships": 1,
        "banks": 1,
        "tokens": 1,
        "live_tokens": 1,
        "trajectories": len(DEMO_TRAJECTORIES),
        "items": len(DEMO_ITEMS),
    }
    admin = get_user_model().objects.get(username="admin")
    assert admin.is_superuser and admin.check_password("admin")
    bank = Bank.objects.get(team__slug="demo", slug="web-agent")
    assert Membership.objects.get(team=bank.team, user=admin).role == "owner"
    formats = set(Trajectory.objects.filter(bank=bank).values_list("input_format", flat=True))
    assert formats == {"steps", "openai", "anthropic"}
    assert set(Trajectory.objects.values_list("verdict", flat=True)) == {""}, "no LLM here: nothing is judged yet"
    assert MemoryItem.objects.filter(bank=bank, status="approved", embedding__isnull=False).count() == len(DEMO_ITEMS)

    run("rb_demo", "--token-file", str(token_file))
    assert _counts() == first
    assert token_file.read_text().strip() == secret

    response = retrieve(client, secret, DEMO_QUERY)
    assert response.status_code == 200, response.content
    assert response.json()["items"], "the banner's example query must find a demo memory"


def test_rb_demo_replaces_a_lost_token_and_keeps_an_existing_admin(db, client, tmp_path):
    factories.make_user("admin", password="not-admin")
    token_file = tmp_path / "demo-token.txt"
    out, _ = run("rb_demo", "--token-file", str(token_file))
    assert "LOCAL DEMO" not in out
    assert get_user_model().objects.get(username="admin").check_password("not-admin")
    old = token_file.read_text().strip()

    token_file.unlink()
    run("rb_demo", "--token-file", str(token_file))
    new = token_file.read_text().strip()
    assert new != old
    assert retrieve(client, old).status_code == 401, "the unrecoverable demo token is retired"
    assert retrieve(client, new).status_code == 200
    assert ApiToken.objects.filter(name="demo", revoked_at__isnull=True).count() == 1
