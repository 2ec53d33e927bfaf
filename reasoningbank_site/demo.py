"""The local demo. Its data lives in ``demo.json`` beside this module (admin
user, team, bank, token, trajectories in all three input shapes, approved
memories); ``demo_seed`` loads it through the real services, so the demo is
data, not code. ``rb_demo`` calls ``demo_seed``; ``rb_run``'s banner reads the
names below (admin login, example query, where the token's secret is kept).

Seeding is idempotent: every object is looked up before it is created. Only
token hashes are stored, so the demo token's secret is kept in
``$RB_DATA_DIR/demo-token.txt`` (mode 600) and read back from there."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model

from accounts.models import ApiToken, Bank, Membership, Role, Team
from accounts.teams.banks import bank_create
from accounts.teams.services import team_create
from accounts.tokens.auth import api_token_for_secret
from accounts.tokens.services import api_token_create, api_token_revoke
from memories.items.models import ItemStatus, MemoryItem, MemoryItemVersion
from memories.items.services import memory_item_create
from reasoningbank_site.analyze import analyze_after_commit
from reasoningbank_site.errors import Conflict
from trajectories.ingest.record import trajectory_ingest
from trajectories.models import Judgment, Trajectory

DEMO_FILE = Path(__file__).with_name("demo.json")
DEMO: dict[str, Any] = json.loads(DEMO_FILE.read_text(encoding="utf-8"))

ADMIN_USERNAME: str = DEMO["admin"]["username"]
ADMIN_PASSWORD: str = DEMO["admin"]["password"]
# The query rb_run's banner shows; it must find at least one demo memory.
DEMO_QUERY: str = DEMO["query"]
DEMO_TRAJECTORIES: list[dict] = DEMO["trajectories"]
DEMO_ITEMS: list[dict] = DEMO["items"]


def demo_token_path() -> Path:
    """Where the demo token's secret is kept by default."""
    return Path(settings.DATA_DIR) / "demo-token.txt"


def write_secret(path: Path, secret: str) -> None:
    """Write ``secret`` readable by the owner only (created 600, never world-readable)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as fh:
        fh.write(secret + "\n")
    path.chmod(0o600)


@dataclass
class DemoSeedReport:
    """What ``demo_seed`` did: the demo bank, the token file, and lines for
    the operator (``warnings`` must be seen; ``notes`` say what was created)."""

    bank: Bank
    token_path: Path
    warnings: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def demo_seed(*, token_path: Path | None = None) -> DemoSeedReport:
    """Create what is missing of the demo described by ``demo.json``: the
    superuser (an existing one of that name is kept, password untouched), its
    team (owner membership ensured), the bank, a live demo token whose secret
    is in ``token_path`` (default ``demo_token_path()``; a lost or foreign
    secret retires the bank's demo tokens and issues a new one), the
    trajectories (ingested, deduplicated by their external_id) and the
    approved items (by title, embedded inline on approval). Running it again
    changes nothing. Raises what the services raise for invalid demo data."""
    token_path = token_path or demo_token_path()
    warnings: list[str] = []
    notes: list[str] = []
    admin = _admin(warnings)
    team = _team(admin, notes)
    bank = _bank(team, notes)
    token = _token(bank, admin, token_path, notes)
    _trajectories(bank, token, notes)
    _items(bank, admin, notes)
    if notes:  # something was loaded into tables PostgreSQL has no statistics of yet
        analyze_after_commit([Trajectory, Judgment, MemoryItem, MemoryItemVersion])
    return DemoSeedReport(bank=bank, token_path=token_path, warnings=warnings, notes=notes)


def _admin(warnings: list[str]):
    spec = DEMO["admin"]
    User = get_user_model()
    admin = User.objects.filter(username=spec["username"]).first()
    if admin is None:
        admin = User.objects.create_superuser(spec["username"], spec["email"], spec["password"])
        warnings.append(
            f"Created superuser '{spec['username']}' with password '{spec['password']}' "
            "-- for a LOCAL DEMO only; change it before anyone else can reach this server."
        )
    return admin


def _team(admin, notes: list[str]) -> Team:
    spec = DEMO["team"]
    team = Team.objects.filter(slug=spec["slug"]).first()
    if team is None:
        team = team_create(name=spec["name"], slug=spec["slug"], owner=admin)
        notes.append(f"Created team '{spec['name']}' ({spec['slug']}).")
    else:
        Membership.objects.get_or_create(team=team, user=admin, defaults={"role": Role.OWNER})
    return team


def _bank(team: Team, notes: list[str]) -> Bank:
    spec = DEMO["bank"]
    bank = Bank.objects.filter(team=team, slug=spec["slug"]).first()
    if bank is None:
        bank = bank_create(
            team=team, name=spec["name"], slug=spec["slug"], description=spec["description"], **spec["settings"]
        )
        notes.append(f"Created bank '{spec['name']}' ({bank}).")
    return bank


def _token(bank: Bank, admin, path: Path, notes: list[str]) -> ApiToken:
    spec = DEMO["token"]
    secret = path.read_text().strip() if path.exists() else ""
    token = api_token_for_secret(raw=secret) if secret else None
    if token is not None and token.bank_id == bank.pk:
        return token
    # The secret on disk is missing or belongs to another database: retire
    # the demo tokens nobody can use any more and issue a fresh one.
    for stale in ApiToken.objects.filter(bank=bank, name=spec["name"], revoked_at__isnull=True):
        api_token_revoke(token=stale)
    issued = api_token_create(bank=bank, name=spec["name"], scopes=spec["scopes"], created_by=admin)
    write_secret(path, issued.secret)
    notes.append(f"Created demo API token {issued.token.prefix}… (secret saved to {path}, mode 600).")
    return issued.token


def _trajectories(bank: Bank, token: ApiToken, notes: list[str]) -> None:
    created = 0
    for data in DEMO_TRAJECTORIES:
        try:
            _, is_new = trajectory_ingest(bank=bank, token=token, data=dict(data))
        except Conflict:  # sent by the demo's earlier token, since replaced: the demo trajectory is there
            is_new = False
        created += int(is_new)
    if created:
        notes.append(f"Sent {created} demo trajectories (they are judged and distilled by the worker).")


def _items(bank: Bank, admin, notes: list[str]) -> None:
    existing = set(MemoryItem.objects.filter(bank=bank).values_list("title", flat=True))
    created = 0
    for spec in DEMO_ITEMS:
        if spec["title"] in existing:
            continue
        # Approved at creation, so embedded here: the demo serves them at once (an approval only enqueues the embedding).
        memory_item_create(bank=bank, author=admin, origin="manual", status=ItemStatus.APPROVED, **spec)
        created += 1
    if created:
        notes.append(f"Created {created} approved demo memories.")
