"""Isolation proof: every UI page with a bank or team in its URL and every
agent-API endpoint, against every kind of caller, gives exactly the allowed
answer. Another team's objects answer 404 (never 403) and never show up in
any page or list.

Pages are discovered by walking the URL resolver and endpoints from the
NinjaAPI's OpenAPI schema, so pages and endpoints added later are covered
without touching this file. A page with no entry in GET_MIN_ROLE is held to
the default: any member (viewer+) may GET it, a non-member gets 404 and an
anonymous visitor is sent to the login page. An action view (marked
``post_action`` by reasoningbank_site.views_helpers) answers GET with 405
and a non-member's POST with 404.

Each test walks the whole matrix for one caller and reports every mismatch
at once, so one world is built per caller (fast) and a failure names all
offending URLs."""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass, field
from datetime import timedelta

import pytest
from django.urls import URLPattern, URLResolver, get_resolver, reverse
from django.utils import timezone

from accounts.audit.services import audit_record
from accounts.models import ApiToken, Invitation, Role
from accounts.teams.banks import bank_archive
from accounts.tokens.services import api_token_create, api_token_revoke
from memories.items.models import ItemStatus, MemoryItem
from memories.releases.models import Release, ReleaseImport
from memories.releases.publishing import release_publish
from reasoningbank_site.api import api
from tests import factories
from trajectories.evaluation.models import TaskSet
from trajectories.evaluation.tasksets import task_set_upload
from trajectories.models import Trajectory

MARK = "ZZ-OTHER-TEAM-SECRET"
SEARCH = "OTHER-TEAM"  # matches their data in any substring search; never the whole MARK

# Pages whose GET needs more than the viewer role (url name → minimum role).
GET_MIN_ROLE = {
    "accounts:bank_create": Role.ADMIN,
    "accounts:bank_webhooks": Role.ADMIN,
    "memories:item_create": Role.REVIEWER,
    "memories:items_import": Role.REVIEWER,
}
ROLES = [Role.OWNER, Role.ADMIN, Role.REVIEWER, Role.VIEWER]
RANK = {Role.VIEWER: 0, Role.REVIEWER: 1, Role.ADMIN: 2, Role.OWNER: 3}

# URL kwargs that name an object of the bank: how to find ours and theirs.
OBJECT_KWARGS = {
    "item_id": "item",
    "memory_id": "item",
    "trajectory_id": "trajectory",
    "token_id": "token",
    "invitation_id": "invitation",
    "release_id": "release",
    "import_id": "release_import",
    "task_set_id": "task_set",
}


@dataclass
class Side:
    team: object
    bank: object
    item: MemoryItem
    trajectory: Trajectory
    token: ApiToken
    secret: str
    invitation: Invitation
    release: Release
    release_import: ReleaseImport
    task_set: TaskSet


@dataclass
class World:
    ours: Side
    theirs: Side
    users: dict = field(default_factory=dict)
    secrets: dict = field(default_factory=dict)
    tokens: dict = field(default_factory=dict)


def _side(team, label: str) -> Side:
    bank = factories.make_bank(team=team, slug=f"bank-{label.lower()}")
    if label == "THEIRS":
        bank.name = f"{MARK} bank"
        bank.save(update_fields=["name"])
    text = MARK if label == "THEIRS" else "Our own"
    item = MemoryItem.objects.create(
        bank=bank,
        title=f"{text} item",
        description=f"{text} description",
        content=f"{text} content",
        status=ItemStatus.APPROVED,
    )
    trajectory = Trajectory.objects.create(
        bank=bank, task=f"{text} task", steps=[{"index": 0, "kind": "answer", "content": "done"}], step_count=1
    )
    issued = api_token_create(bank=bank, name=f"{text} token", scopes=["retrieve", "ingest", "review"])
    audit_record(action="comment.create", bank=bank, after={"text": text})
    invitation = Invitation.objects.create(
        team=team,
        email=f"{label.lower()}@example.com",
        token_hash=f"isolation-{label}",
        expires_at=timezone.now() + timedelta(days=1),
    )
    release = release_publish(bank=bank, note=f"{text} release").release
    return Side(
        team=team,
        bank=bank,
        item=item,
        trajectory=trajectory,
        token=issued.token,
        secret=issued.secret,
        invitation=invitation,
        release=release,
        release_import=ReleaseImport.objects.create(bank=bank, state="done", message=f"{text} import"),
        task_set=task_set_upload(bank=bank, name=f"{text} tasks", body=json.dumps({"id": "t", "task": text}).encode()),
    )


@pytest.fixture
def world(db) -> World:
    users = {role: factories.make_user(f"iso-{role}") for role in ROLES}
    users["stranger"] = factories.make_user("iso-stranger")
    team = factories.make_team(owner=users[Role.OWNER], slug="iso-ours")
    for role in ROLES[1:]:
        factories.make_member(team, role, user=users[role])
    other_team = factories.make_team(owner=users["stranger"], slug="iso-theirs")
    other_team.name = f"{MARK} team"
    other_team.save(update_fields=["name"])
    w = World(ours=_side(team, "OURS"), theirs=_side(other_team, "THEIRS"), users=users)

    bank = w.ours.bank
    w.secrets = {
        "this_bank": w.ours.secret,
        "other_bank": w.theirs.secret,
        "retrieve_only": api_token_create(bank=bank, name="ro", scopes=["retrieve"]).secret,
        "ingest_only": api_token_create(bank=bank, name="io", scopes=["ingest"]).secret,
    }
    # Tokens without the review scope reach only the runs they sent (API matrix below).
    for name, scopes in (("own_runs_ingest", ["ingest"]), ("own_runs_retrieve_ingest", ["retrieve", "ingest"])):
        issued = api_token_create(bank=bank, name=name, scopes=scopes)
        w.secrets[name] = issued.secret
        w.tokens[name] = issued.token
    revoked = api_token_create(bank=bank, name="revoked", scopes=["retrieve", "ingest"])
    api_token_revoke(token=revoked.token)
    expired = api_token_create(
        bank=bank, name="expired", scopes=["retrieve", "ingest"], expires_at=timezone.now() + timedelta(hours=1)
    )
    ApiToken.objects.filter(pk=expired.token.pk).update(expires_at=timezone.now() - timedelta(seconds=1))
    w.secrets["revoked"] = revoked.secret
    w.secrets["expired"] = expired.secret
    return w


# --- discovery ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Page:
    name: str
    kwargs: tuple[str, ...]
    post_action: bool = False  # a POST-only action view: GET answers 405


def ui_pages() -> list[Page]:
    """Every named URL pattern whose route takes a bank_id or team_id."""
    found: list[Page] = []

    def walk(patterns, namespace: str, inherited: tuple[str, ...]):
        for p in patterns:
            converters = tuple(getattr(p.pattern, "converters", {}).keys())
            if isinstance(p, URLResolver):
                ns = f"{namespace}{p.namespace}:" if p.namespace else namespace
                walk(p.url_patterns, ns, inherited + converters)
            elif isinstance(p, URLPattern) and p.name:
                kwargs = inherited + converters
                if "bank_id" in kwargs or "team_id" in kwargs:
                    found.append(Page(f"{namespace}{p.name}", kwargs, getattr(p.callback, "post_action", False)))

    walk(get_resolver().url_patterns, "", ())
    return sorted(set(found), key=lambda page: page.name)


@dataclass(frozen=True)
class Endpoint:
    method: str
    path: str  # with {param}s
    params: tuple[str, ...]
    scope: str | None
    has_body: bool


def api_endpoints() -> list[Endpoint]:
    """Every operation of the agent API's OpenAPI schema, with the scope its
    TokenAuth requires (read from the ninja operation behind it)."""
    scopes: dict[tuple[str, str], str | None] = {}
    for _prefix, router in api._routers:
        for path, view in router.path_operations.items():
            for op in view.operations:
                for method in op.methods:
                    scope = next((getattr(cb, "scope", None) for cb in op.auth_callbacks or []), None)
                    scopes[(method.upper(), path)] = scope
    schema = api.get_openapi_schema()
    base = api.root_path if hasattr(api, "root_path") else ""
    endpoints = []
    for path, ops in schema["paths"].items():
        for method, op in ops.items():
            relative = path.split("/api/v1", 1)[-1]
            endpoints.append(
                Endpoint(
                    method=method.upper(),
                    path=path,
                    params=tuple(p["name"] for p in op.get("parameters", []) if p.get("in") == "path"),
                    scope=scopes.get((method.upper(), relative)),
                    has_body="requestBody" in op,
                )
            )
    assert endpoints or base == "", "no API endpoints found"
    return endpoints


def _object(side: Side, kwarg: str):
    kind = OBJECT_KWARGS.get(kwarg)
    return getattr(side, kind) if kind else None


def _page_url(page: Page, side: Side, objects_from: Side | None = None) -> str | None:
    """The page's URL for ``side``'s bank/team; object kwargs taken from
    ``objects_from`` (default: the same side). None if a kwarg is unknown."""
    objects_from = objects_from or side
    kwargs = {}
    for name in page.kwargs:
        if name == "bank_id":
            kwargs[name] = side.bank.public_id
        elif name == "team_id":
            kwargs[name] = side.team.public_id
        elif (obj := _object(objects_from, name)) is not None:
            kwargs[name] = obj.public_id
        else:
            return None
    return reverse(page.name, kwargs=kwargs)


def _generic_url(page: Page, side: Side) -> str:
    """The page's URL with unknown object kwargs filled by random ids."""
    kwargs = {}
    for name in page.kwargs:
        if name == "bank_id":
            kwargs[name] = side.bank.public_id
        elif name == "team_id":
            kwargs[name] = side.team.public_id
        else:
            obj = _object(side, name)
            kwargs[name] = obj.public_id if obj is not None else uuid.uuid4()
    return reverse(page.name, kwargs=kwargs)


def _get_within(client, url: str, side: Side):
    """GET, following redirects only while they stay inside ``side``'s bank
    (a page may hand over to a sibling page, e.g. a fragment URL without htmx)."""
    response = client.get(url)
    prefix = f"/banks/{side.bank.public_id}/"
    for _ in range(3):
        location = response.get("Location", "") if response.status_code in (301, 302) else ""
        if not location.startswith(prefix):
            break
        response = client.get(location)
    return response


def _body(response) -> str:
    if getattr(response, "streaming", False):
        return b"".join(response.streaming_content).decode(errors="replace")
    return response.content.decode(errors="replace")


def _report(problems: list[str]) -> None:
    assert not problems, "isolation matrix mismatches:\n  " + "\n  ".join(problems)


# --- UI matrix ------------------------------------------------------------------------------


def test_discovery_finds_the_known_pages_and_endpoints():
    names = {p.name for p in ui_pages()}
    assert {"accounts:bank_tokens", "accounts:bank_settings", "accounts:bank_audit", "accounts:team"} <= names
    actions = {p.name for p in ui_pages() if p.post_action}
    assert {
        "memories:item_approve",
        "accounts:token_revoke",
        "accounts:team_invite",
        "accounts:bank_archive",
        "trajectories:delete",
        "trajectories:retry",
    } <= actions
    assert "memories:item_detail" not in actions
    assert all(e.path.startswith("/api/v1/") for e in api_endpoints())
    delete = [e for e in api_endpoints() if e.method == "DELETE"]
    assert [(e.path, e.scope) for e in delete] == [
        ("/api/v1/trajectories/{trajectory_id}", "ingest"),
        ("/api/v1/task-sets/{task_set_id}", "review"),
    ]


@pytest.mark.parametrize("role", ROLES)
def test_ui_members_get_exactly_what_their_role_allows(client, world, role):
    client.force_login(world.users[role])
    problems = []
    for page in ui_pages():
        url = _page_url(page, world.ours)
        if url is None:
            continue  # an object kwarg this file cannot fill: covered by the non-member tests
        if page.post_action:
            expected = 405
        else:
            expected = 200 if RANK[role] >= RANK[GET_MIN_ROLE.get(page.name, Role.VIEWER)] else 403
        response = _get_within(client, url, world.ours)
        body = _body(response)
        if response.status_code != expected:
            problems.append(f"{role} GET {page.name} {url}: {response.status_code}, expected {expected}")
        if MARK in body:
            problems.append(f"{role} GET {page.name} {url}: shows another team's data")
        # Search/filter parameters must not reach into other teams either. The
        # query is part of the marker, so a page echoing it back is no false alarm.
        searched = client.get(url, {"q": SEARCH, "query": SEARCH, "object": SEARCH, "search": SEARCH})
        if MARK in _body(searched):
            problems.append(f"{role} GET {page.name} ?q=: shows another team's data")
    _report(problems)


def test_ui_another_teams_member_gets_404_on_everything(client, world):
    """A member of another team (who owns a bank of their own) gets 404 on
    every page and every action of ours, never 403."""
    client.force_login(world.users["stranger"])
    problems = []
    for page in ui_pages():
        url = _generic_url(page, world.ours)
        for method in ("get", "post"):
            response = getattr(client, method)(url, {"action": "archive"} if method == "post" else {})
            if page.post_action:
                allowed = {405} if method == "get" else {404}
            else:
                allowed = {404} if method == "get" else {404, 405}
            if response.status_code not in allowed:
                problems.append(
                    f"stranger {method.upper()} {page.name} {url}: {response.status_code}, expected {sorted(allowed)}"
                )
    _report(problems)


def test_ui_objects_of_another_team_are_404_inside_our_bank(client, world):
    """Our bank's URL with another team's object id in it: 404 for our owner
    (an action view is POSTed to: it must refuse before changing anything)."""
    client.force_login(world.users[Role.OWNER])
    problems = []
    for page in ui_pages():
        if not any(k in OBJECT_KWARGS for k in page.kwargs):
            continue
        url = _page_url(page, world.ours, objects_from=world.theirs)
        if url is None:
            continue
        method = "POST" if page.post_action else "GET"
        response = client.post(url) if page.post_action else client.get(url)
        if response.status_code != 404:
            problems.append(f"owner {method} {page.name} {url} with their object: {response.status_code}, expected 404")
    _report(problems)


def test_ui_anonymous_is_sent_to_login(client, world):
    login = reverse("accounts:login")
    problems = []
    for page in ui_pages():
        url = _generic_url(page, world.ours)
        for method in ("get", "post"):
            response = getattr(client, method)(url)
            ok = (response.status_code == 302 and response["Location"].startswith(login)) or (
                method == "post" and response.status_code == 405
            )
            if not ok:
                problems.append(
                    f"anonymous {method.upper()} {page.name}: {response.status_code} {response.get('Location', '')}"
                )
    _report(problems)


def test_ui_viewer_and_reviewer_cannot_use_admin_actions(client, world):
    """Admin actions of the accounts pages answer 403 to members below admin
    and change nothing."""
    bank = world.ours.bank
    team = world.ours.team
    actions = [
        (reverse("accounts:bank_archive", kwargs={"bank_id": bank.public_id}), {}),
        (
            reverse(
                "accounts:token_revoke", kwargs={"bank_id": bank.public_id, "token_id": world.ours.token.public_id}
            ),
            {},
        ),
        (reverse("accounts:token_create", kwargs={"bank_id": bank.public_id}), {"name": "x", "scopes": ["retrieve"]}),
        (
            reverse("accounts:bank_create", kwargs={"team_id": team.public_id}),
            {"name": "new", "retrieval_mode": "items", "top_k": 3},
        ),
        (
            reverse("accounts:team_invite", kwargs={"team_id": team.public_id}),
            {"email": "a@example.com", "role": "viewer"},
        ),
        (
            reverse(
                "trajectories:delete",
                kwargs={"bank_id": bank.public_id, "trajectory_id": world.ours.trajectory.public_id},
            ),
            {"confirm": "1"},
        ),
    ]
    problems = []
    for role in (Role.REVIEWER, Role.VIEWER):
        client.force_login(world.users[role])
        for url, data in actions:
            response = client.post(url, data)
            if response.status_code != 403:
                problems.append(f"{role} POST {url}: {response.status_code}, expected 403")
    _report(problems)
    bank.refresh_from_db()
    world.ours.token.refresh_from_db()
    assert not bank.is_archived and world.ours.token.revoked_at is None
    assert Trajectory.objects.filter(pk=world.ours.trajectory.pk).exists()


# --- API matrix ----------------------------------------------------------------------------------


def _api_url(endpoint: Endpoint, side: Side) -> str:
    path = endpoint.path
    for name in endpoint.params:
        obj = _object(side, name)
        path = path.replace("{" + name + "}", str(obj.public_id if obj is not None else uuid.uuid4()))
    return path


# The smallest valid body of an endpoint whose body has a required field (else ``{}``): a 422 for the
# body would come before the object lookup and hide whether the object is reachable.
MINIMAL_BODY = {
    "/api/v1/review/items/{item_id}/reject": {"reason": "Isolation matrix."},
    "/api/v1/review/items/{item_id}/archive-as-wrong": {"reason": "Isolation matrix."},
    "/api/v1/review/items/{item_id}/supersede": {"replacement": str(uuid.uuid4())},
    "/api/v1/releases/{release_id}/canary": {"fraction": 0.1},
}


def _call(client, endpoint: Endpoint, url: str, secret: str | None):
    headers = {"HTTP_AUTHORIZATION": f"Bearer {secret}"} if secret else {}
    if endpoint.method == "GET":
        return client.get(url, **headers)
    body = json.dumps(MINIMAL_BODY.get(endpoint.path, {}))
    return client.generic(endpoint.method, url, data=body, content_type="application/json", **headers)


def _code(response) -> str:
    """The machine code of an API error: ``code`` of our JSON errors, or the
    ErrorInfo reason of the google.rpc.Status that the OTLP endpoint answers."""
    try:
        body = response.json()
    except ValueError:
        return "<not json>"
    for detail in body.get("details") or []:
        if isinstance(detail, dict) and detail.get("reason"):
            return detail["reason"]
    return body.get("code", "")


@pytest.mark.parametrize("caller", ["anonymous", "session_owner", "revoked", "expired"])
def test_api_rejects_callers_without_a_live_token(client, world, caller):
    """No token (even with a logged-in browser session), a revoked or an
    expired token: 401 JSON on every endpoint."""
    if caller == "session_owner":
        client.force_login(world.users[Role.OWNER])
    secret = world.secrets.get(caller)
    problems = []
    for endpoint in api_endpoints():
        response = _call(client, endpoint, _api_url(endpoint, world.ours), secret)
        if response.status_code != 401 or _code(response) not in {"missing_token", "invalid_token"}:
            problems.append(f"{caller} {endpoint.method} {endpoint.path}: {response.status_code} {_code(response)}")
    _report(problems)


def test_api_token_of_this_bank_reaches_its_objects_and_only_them(client, world):
    problems = []
    for endpoint in api_endpoints():
        response = _call(client, endpoint, _api_url(endpoint, world.ours), world.secrets["this_bank"])
        if endpoint.has_body:
            # An empty (or minimal) body passes auth and fails validation, or reaches the object and meets
            # its status rules (a 409 such as rejecting an approved item) — never 401/403/404/5xx.
            expected_ok = (
                response.status_code in (200, 201, 202)
                or (response.status_code == 422 and _code(response) == "validation_error")
                or (response.status_code == 409 and bool(_code(response)))
            )
        else:
            expected_ok = response.status_code == 200
        if not expected_ok:
            problems.append(
                f"this-bank token {endpoint.method} {endpoint.path}: {response.status_code} {_code(response)}"
            )
        if MARK in _body(response):
            problems.append(f"this-bank token {endpoint.method} {endpoint.path}: returns another team's data")
        if endpoint.params:
            theirs = _call(client, endpoint, _api_url(endpoint, world.theirs), world.secrets["this_bank"])
            if theirs.status_code != 404 or _code(theirs) != "not_found":
                problems.append(
                    f"this-bank token {endpoint.method} {endpoint.path} on their object: {theirs.status_code} {_code(theirs)}"
                )
    _report(problems)


@pytest.mark.parametrize("caller", ["own_runs_ingest", "own_runs_retrieve_ingest"])
def test_api_token_without_review_reaches_only_the_runs_it_sent(client, world, caller):
    """Inside its own bank, a token without the review scope gets 404 on every endpoint that names a run
    another token sent (as if absent), and reaches its own runs; a review token (``this_bank`` above)
    reaches every run of the bank."""
    token = world.tokens[caller]
    problems = []
    for endpoint in api_endpoints():
        if "trajectory_id" not in endpoint.params:
            continue
        own = Trajectory.objects.create(
            bank=world.ours.bank, token=token, task="Own run", steps=[{"index": 0, "kind": "answer"}], step_count=1
        )
        for target, expected in ((world.ours.trajectory, 404), (own, 200)):
            url = endpoint.path.replace("{trajectory_id}", str(target.public_id))
            response = _call(client, endpoint, url, world.secrets[caller])
            if response.status_code != expected:
                problems.append(f"{caller} {endpoint.method} {url}: {response.status_code}, expected {expected}")
            if expected == 404 and (_code(response) != "not_found" or "Our own" in _body(response)):
                problems.append(f"{caller} {endpoint.method} {url}: {_code(response)} reveals another token's run")
    _report(problems)
    assert Trajectory.objects.filter(pk=world.ours.trajectory.pk).exists()


def test_api_token_of_another_bank_gets_404_on_our_objects(client, world):
    problems = []
    for endpoint in api_endpoints():
        response = _call(client, endpoint, _api_url(endpoint, world.ours), world.secrets["other_bank"])
        if endpoint.params:
            if response.status_code != 404:
                problems.append(
                    f"other-bank token {endpoint.method} {endpoint.path} on our object: {response.status_code}"
                )
        elif response.status_code in (401, 403) or response.status_code >= 500:
            problems.append(f"other-bank token {endpoint.method} {endpoint.path}: {response.status_code}")
        if "Our own" in _body(response):
            problems.append(f"other-bank token {endpoint.method} {endpoint.path}: returns our data")
    _report(problems)


def test_api_scopes_are_enforced(client, world):
    problems = []
    for endpoint in api_endpoints():
        if endpoint.scope is None:
            continue
        wrong = "ingest_only" if endpoint.scope == "retrieve" else "retrieve_only"
        response = _call(client, endpoint, _api_url(endpoint, world.ours), world.secrets[wrong])
        if response.status_code != 403 or _code(response) != "missing_scope":
            problems.append(f"{wrong} {endpoint.method} {endpoint.path}: {response.status_code} {_code(response)}")
    _report(problems)


def test_api_archived_bank_serves_and_accepts_nothing(client, world):
    bank_archive(bank=world.ours.bank, actor=world.users[Role.OWNER])
    problems = []
    for endpoint in api_endpoints():
        response = _call(client, endpoint, _api_url(endpoint, world.ours), world.secrets["this_bank"])
        if response.status_code != 403 or _code(response) != "bank_archived":
            problems.append(f"archived {endpoint.method} {endpoint.path}: {response.status_code} {_code(response)}")
    _report(problems)
