"""Generated fuzz of every UI form: each field of each form and
each GET filter gets hostile values — NUL, lone surrogates (as raw bytes),
huge numbers and dates, UTC offsets PostgreSQL cannot store, a "²", deeply
nested JSON, CR/LF, a 1 MB string — sent as the logged-in owner. Any 5xx
fails. Bounded: one request per (target, field, value), plus one with
neutral values per target.

The targets come from the URLconf, walked as tests/test_isolation.py walks
it: every POST-only action view (marked ``post_action`` by
reasoningbank_site.views_helpers) and every page. ``FORMS`` says which fields
each one reads; a URL name that is in neither ``FORMS`` nor ``SKIPPED`` fails
the test, and an action view may not be skipped, so a view added later is
fuzzed or consciously left out. Every target must be reached: its neutral
request answers neither 404 nor 405, and no hostile request answers 405, nor
404 unless the hostile value is in a field that names an object by id."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from urllib.parse import urlencode

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import URLPattern, URLResolver, get_resolver, reverse
from django.utils import timezone

from accounts.models import Invitation, Membership, Role, WebhookDelivery, WebhookSubscription
from accounts.teams.banks import BANK_SETTINGS
from accounts.tokens.services import api_token_create
from memories.learning.models import BankLearning
from memories.learning.policy import BANK_LEARNING_SETTINGS
from memories.releases.models import Release
from memories.review.collaboration import review_assignment_create
from memories.review.decisions import memory_item_approve
from memories.trust.models import AutoApproval
from tests import factories
from trajectories.evaluation.tasksets import task_set_upload
from trajectories.judging.models import Experiment, ExperimentStatus
from trajectories.judging.prompt_versions import prompt_version_save
from trajectories.prompts import prompt_load
from trajectories.records.comments import comment_add

HOSTILE = {
    "nul": "a\x00b",
    "surrogate": "a\udcffb",  # what a stray UTF-8 byte decodes to with surrogateescape
    "crlf": "x\r\nBcc: evil@example.com",
    "huge-int": "9223372036854775808",
    "power": str(10**30),
    "negative": "-1",
    "date-max": "9999-12-31",
    "date-min": "0001-01-01",
    "datetime-max": "9999-12-31T23:59",
    "datetime-offset": "2030-01-01T00:00+16:00",  # beyond PostgreSQL's ±15:59
    "datetime-utc-10000": "9999-12-31T23:00-02:00",  # year 10000 once in UTC
    "superscript-digit": "²",  # str.isdigit() says yes, int() says no
    "deep-json": "[" * 5000,
    "float": "1e308",
    "nan": "NaN",
    "megabyte": "x" * (1024 * 1024),
    "uuid-ish": "00000000-0000-0000-0000-000000000000",
}

# Namespaces that are not the HTML UI: Django's admin, the agent API (tests/hardening/test_fuzz_api.py).
OTHER_NAMESPACES = {"admin", "api-v1"}

# Fields that name an object by id: a hostile value there may rightly answer 404.
ID_FIELDS = {"membership"}

# URL names not fuzzed here, and why. Action views may not appear here.
SKIPPED = {
    "accounts:home": "reads no input",
    "accounts:login": "Django's LoginView; a logged-in user is redirected (throttling: test_accounts_security.py)",
    "accounts:logout": "Django's LogoutView: reads no input",
    "accounts:password_reset_done": "reads no input",
    "accounts:password_reset_complete": "reads no input",
    "accounts:password_reset_confirm": "Django's view; its secrets are path segments",
    "accounts:verify_email": "its secrets are path segments (test_accounts_security.py)",
    "accounts:invitation_accept": "its secret is a path segment (test_accounts_security.py)",
    "accounts:team": "reads no input (its forms post to the action views)",
    "accounts:bank_tokens": "reads no input (its forms post to the action views)",
    "accounts:bank_webhooks": "reads no input (its forms post to the action views)",
    "accounts:webhook_detail": "reads no input (its forms post to the action views)",
    "memories:items_import": "a file upload: test_import_form_survives_hostile_files below",
    "memories:item_compare": "reads no input (its two items are path segments)",
    "memories:items_skills": "reads no input (the file is a path segment; an unknown one is a 404: test_skill_files.py)",
    "trajectories:dashboard": "reads no input",
    "trajectories:release_export": "reads no input (the release is a path segment)",
    "trajectories:release_import": "reads no input (the import is a path segment; its file: test_fuzz_release_import.py)",
    "trajectories:group": "reads no input",
    "trajectories:export": "reads no input",
    "trajectories:export_reasoning_bank": "reads no input",
    "trajectories:evaluation_detail": "the run is a path segment; its cancel's action: test_views_runs.py",
    "trajectories:evaluation_task": "the run and the task key are path segments: test_views_runs.py",
    "favicon": "reads no input (a redirect to static/favicon.svg)",
    "healthz": "reads no input (test_health.py)",
    "readyz": "reads no input (test_health.py)",
    "metrics": "reads no input (test_metrics.py)",
}

AUDIT_FILTERS = {"action": "", "actor": "", "object": "", "since": "", "until": ""}


@dataclass
class Scene:
    owner: object
    team: object
    bank: object
    item: object
    into: object  # a second item, to merge into
    queued: object  # a third, for the review queue's bulk form
    trajectory: object
    token: object
    invitation: object
    member: Membership  # changes role
    leaver: Membership  # is removed
    prompt: object  # a saved judge prompt version
    experiment: object  # a finished experiment, to promote
    assignment: object = None  # a slice of the queue, to remove
    comment: object = None  # the owner's comment on the item, to delete
    webhook: object = None  # a webhook of the bank (enabled, redelivered, removed last)
    delivery: object = None  # its failed delivery, to redeliver
    release: object = None  # a release of the bank (the releases pages)
    task_set: object = None  # an uploaded task set (its page; deleted last)


def _form_value(value) -> str:
    if isinstance(value, bool):
        return "on" if value else ""
    return "" if value is None else str(value)


def forms(s: Scene) -> dict[str, list[tuple[str, dict]]]:
    """URL name → (method, neutral fields) of each form or filter it reads.
    Neutral values are valid where that is cheap, so a hostile value in one
    field gets past the others to the service."""
    edit = {"title": "Fuzzed title", "description": "d", "content": "c", "note": ""}
    return {
        # accounts: teams
        "accounts:signup": [("get", {"next": "/"})],
        "accounts:password_reset": [("post", {"email": "nobody@example.com"})],
        "accounts:team_create": [("post", {"name": "Fuzz team"})],
        "accounts:team_invite": [("post", {"email": "fuzz@example.com", "role": Role.VIEWER, "allow_any_email": ""})],
        "accounts:member_change_role": [("post", {"membership": str(s.member.pk), "role": Role.REVIEWER})],
        "accounts:member_remove": [("post", {"membership": str(s.leaver.pk)})],
        "accounts:team_leave": [("post", {"next": ""})],  # reads nothing: the body must still parse
        "accounts:invitation_revoke": [("post", {"next": ""})],
        "accounts:bank_create": [
            ("post", {"name": "Fuzz bank", "description": "d", "retrieval_mode": "items", "top_k": "3"})
        ],
        "accounts:team_audit": [("get", {**AUDIT_FILTERS, "page": ""})],
        "accounts:team_audit_csv": [("get", AUDIT_FILTERS)],
        # accounts: banks and tokens
        "accounts:bank_settings": [("post", {name: _form_value(getattr(s.bank, name)) for name in BANK_SETTINGS})],
        "accounts:bank_archive": [("post", {"next": ""})],
        "accounts:bank_unarchive": [("post", {"next": ""})],
        "accounts:token_create": [("post", {"name": "agent", "scopes": "retrieve", "expires_at": ""})],
        "accounts:token_revoke": [("post", {"next": ""})],
        "accounts:webhook_create": [
            ("post", {"url": "http://127.0.0.1:9/fuzz", "events": "item.approved", "description": "d"})
        ],
        "accounts:webhook_enable": [("post", {})],
        "accounts:delivery_redeliver": [("post", {})],
        "accounts:webhook_delete": [("post", {})],  # the last of its URLs: it removes the webhook
        "accounts:bank_audit": [("get", {**AUDIT_FILTERS, "page": ""})],
        "accounts:bank_audit_csv": [("get", AUDIT_FILTERS)],
        # memories
        "memories:review": [
            (
                "get",
                {
                    "q": "",
                    "origin": "",
                    "verdict": "",
                    "agent": "",
                    "date_from": "",
                    "date_to": "",
                    "dup": "",
                    "assigned": "",
                    "page": "",
                },
            ),
            (
                "post",
                {
                    "action": "approve",
                    "items": str(s.queued.public_id),
                    "reason": "",
                    "next": "",
                    f"seen-{s.queued.public_id}": "",
                },
            ),
        ],
        "memories:review_focus": [("get", {"edit": "1"})],
        "memories:items": [("get", {"status": "", "q": "", "page": ""})],
        "memories:item_create": [("post", {**edit, "approve_now": ""})],
        "memories:items_export": [("get", {"status": ""})],
        "memories:item_detail": [("get", {"edit": "1"})],
        "memories:item_edit": [("post", {**edit, "focus": "", "seen_version": ""})],
        "memories:item_approve": [("post", {"focus": "", "seen_version": ""})],
        "memories:item_reject": [("post", {"reason": "Too vague.", "focus": "", "seen_version": ""})],
        "memories:item_archive": [("post", {"focus": "", "seen_version": ""})],
        "memories:item_merge": [("post", {"into": str(s.into.public_id), "note": "", "focus": "", "seen_version": ""})],
        "memories:item_keep_both": [("post", {"focus": "", "seen_version": ""})],
        "memories:item_revert": [("post", {"decision": "1", "focus": "", "queue": "", "row": "", "next": ""})],
        "memories:bank_learning": [
            ("post", {name: _form_value(getattr(BankLearning(), name)) for name in BANK_LEARNING_SETTINGS})
        ],
        "memories:item_lifecycle": [
            (
                "post",
                {"action": "validity", "valid_until": "", "note": "", "replacement": "", "focus": "", "queue": ""},
            ),
            ("post", {"action": "supersede", "replacement": str(s.into.public_id), "seen_version": ""}),
        ],
        "memories:playground": [("get", {"q": "opening hours", "k": "3"})],
        # several reviewers (a remove/delete reads nothing but its URL: the neutral request is the only one)
        "memories:review_presence": [("post", {})],
        "memories:review_assignments": [
            (
                "post",
                {
                    "reviewer": str(s.owner.pk),
                    "origin": "",
                    "verdict": "",
                    "agent": "",
                    "tag": "",
                    "items": "",
                    "note": "",
                },
            )
        ],
        "memories:review_assignment_remove": [("post", {})],
        "memories:guidelines_fold": [("post", {"folded": "1", "next": "/"})],
        "memories:saved_view_create": [("post", {"name": "fuzzed view", "queue": "dup=on"})],
        "memories:saved_view_remove": [("post", {"view": "not-a-uuid"})],
        "memories:review_policy": [
            ("post", {"guidelines": "Be *strict*.", "decisions_required": "1", "distribution": "claim"})
        ],
        # places on items (the scene's policy does not distribute by claim: each answers with a message)
        "memories:review_claim_batch": [("post", {})],
        "memories:review_claim_item": [("post", {"next": "/"})],
        "memories:review_release_item": [("post", {"holder": "nobody", "next": "/"})],
        # trust: the policy, an audit answer (the scene's item is not auto-approved: a 404), the bulk undo
        "memories:trust": [
            (
                "post",
                {
                    "min_tier": "2",
                    "auto_approve": "",
                    "auto_approve_agents": "",
                    "audit_percent": "10",
                    "daily_llm_token_budget": "",
                },
            )
        ],
        "memories:trust_audit": [("post", {"agree": "1"})],
        "memories:trust_undo": [("post", {"since": "2000-01-01T00:00"})],
        "trajectories:item_comments": [("post", {"body": "A fuzzed comment."})],
        "trajectories:trajectory_comments": [("post", {"body": "A fuzzed comment."})],
        "trajectories:comment_remove": [("post", {})],
        "trajectories:reviewers": [("get", {"days": "30"})],
        # trajectories
        "trajectories:list": [("get", {"q": "", "status": "", "verdict": "", "agent": "", "page": ""})],
        "trajectories:detail": [
            ("get", {"partial": "derived"}),
            ("get", {"kind": "errors", "page": "2"}),
            ("post", {"label": "failure", "reason": "The hours were wrong."}),
        ],
        # Without confirm=1 it answers the confirmation page: the scene's trajectory must survive the fuzz.
        "trajectories:steps": [("get", {"kind": "", "page": ""})],
        "trajectories:evidence": [("get", {"kind": "", "page": ""}), ("post", {"action": "agree"})],
        "trajectories:delete": [("post", {"confirm": ""})],
        "trajectories:impact": [("get", {"days": "30"})],
        "trajectories:impact_items": [("get", {"days": "30", "started": ""})],
        "trajectories:dashboard_figures": [("get", {"started": ""})],
        "trajectories:reviewers_figures": [("get", {"days": "30", "started": "", "fresh": ""})],
        "trajectories:task_sets": [
            ("get", {"preview": "1", "outcome": "", "agent": "", "text": "", "date_from": "", "limit": ""}),
            ("post", {"action": "preview", "outcome": "any", "agent": "", "text": "", "date_to": "", "limit": "5"}),
            (
                "post",
                {"action": "create", "name": "", "description": "", "outcome": "", "limit": "", "any_verdict": ""},
            ),
            ("post", {"action": "upload", "upload-name": "", "upload-description": ""}),
        ],
        "trajectories:task_set_detail": [("get", {"page": ""})],
        "trajectories:task_set_delete": [("post", {})],
        "trajectories:evaluations": [
            ("post", {"task_set": "", "arms": "candidate", "release": "1", "k": "3", "token_budget": "", "note": ""})
        ],
        "trajectories:releases": [
            ("post", {"action": "publish", "note": "", "canary_percent": ""}),
            ("post", {"action": "canary", "number": "1", "canary_percent": "10"}),
            ("post", {"action": "rollback", "number": "1"}),
            ("post", {"action": "mode", "mode": "manual"}),
            ("post", {"action": "auto_rollback", "auto_rollback": "on"}),
        ],
        "trajectories:release_detail": [("get", {"against": "1"})],
        "trajectories:export_chat": [("get", {"verdict": "success", "metadata": "1"})],
        "trajectories:export_judge_eval": [("get", {"input": "1"})],
        "trajectories:judge": [
            ("post", {"candidate_prompt": str(s.prompt.public_id), "candidate_model": "", "candidate_few_shot": ""})
        ],
        "trajectories:prompt_edit": [
            ("get", {"from": str(s.prompt.public_id)}),
            ("post", {"text": prompt_load("judge")[0], "note": "", "activate": ""}),
        ],
        "trajectories:prompt_activate": [("post", {"next": ""})],
        "trajectories:experiment": [("get", {"partial": ""})],
        "trajectories:experiment_promote": [("post", {"next": ""})],
        "trajectories:retry": [("post", {"next": ""})],  # reads nothing: the body must still parse
    }


@dataclass(frozen=True)
class Target:
    name: str
    kwargs: tuple[str, ...]
    post_action: bool


def ui_targets() -> list[Target]:
    """Every named URL pattern of the HTML UI, in URLconf order."""
    found: list[Target] = []

    def walk(patterns, namespace: str, inherited: tuple[str, ...]):
        for p in patterns:
            converters = tuple(getattr(p.pattern, "converters", {}).keys())
            if isinstance(p, URLResolver):
                if p.namespace in OTHER_NAMESPACES:
                    continue
                ns = f"{namespace}{p.namespace}:" if p.namespace else namespace
                walk(p.url_patterns, ns, inherited + converters)
            elif isinstance(p, URLPattern) and p.name:
                found.append(
                    Target(f"{namespace}{p.name}", inherited + converters, getattr(p.callback, "post_action", False))
                )

    walk(get_resolver().url_patterns, "", ())
    return list(dict.fromkeys(found))


def _url(target: Target, s: Scene) -> str:
    objects = {
        "team_id": s.team,
        "bank_id": s.bank,
        "item_id": s.item,
        "trajectory_id": s.trajectory,
        "token_id": s.token,
        "invitation_id": s.invitation,
        "version_id": s.prompt,
        "experiment_id": s.experiment,
        "assignment_id": s.assignment,
        "comment_id": s.comment,
        "webhook_id": s.webhook,
        "delivery_id": s.delivery,
        "release_id": s.release,
        "task_set_id": s.task_set,
    }
    kwargs = {name: "judge" if name == "name" else objects[name].public_id for name in target.kwargs}
    return reverse(target.name, kwargs=kwargs)


def _send(client, method: str, url: str, data: dict):
    # As raw bytes, so a lone surrogate arrives as the invalid UTF-8 a browser could send.
    encoded = urlencode({k: v.encode("utf-8", "surrogateescape") for k, v in data.items()})
    if method == "get":
        response = client.get(f"{url}?{encoded}")
    else:
        response = client.post(url, encoded, content_type="application/x-www-form-urlencoded")
    if getattr(response, "streaming", False):
        b"".join(response.streaming_content)  # an export fails while streaming, not before
    return response


@pytest.fixture
def scene(owner, team, bank) -> Scene:
    trajectory = factories.make_done_trajectory(bank)
    item = factories.propose_item(bank, trajectory)
    into = factories.propose_item(bank, trajectory, title="Another lesson", content="Something else entirely.")
    queued = factories.bulk_items(bank, 1)[0]
    token = api_token_create(bank=bank, name="fuzzed", scopes=["retrieve"]).token
    invitation = Invitation.objects.create(
        team=team, email="invited@example.com", token_hash="fuzz", expires_at=timezone.now() + timedelta(days=1)
    )
    member = Membership.objects.get(team=team, user=factories.make_member(team, Role.VIEWER))
    leaver = Membership.objects.get(team=team, user=factories.make_member(team, Role.VIEWER))
    prompt = prompt_version_save(bank=bank, name="judge", text=prompt_load("judge")[0], activate=False)
    experiment = Experiment.objects.create(bank=bank, candidate_prompt=prompt, status=ExperimentStatus.DONE)
    scene = Scene(
        owner, team, bank, item, into, queued, trajectory, token, invitation, member, leaver, prompt, experiment
    )
    scene.assignment = review_assignment_create(bank=bank, reviewer=owner, author=owner, tag="fuzz")
    scene.comment = comment_add(bank=bank, author=owner, body="To be deleted.", item=item)
    AutoApproval.objects.create(item=item, bank=bank, sampled=True)  # the trust page's audit answers reach it
    scene.webhook = WebhookSubscription.objects.create(
        bank=bank, url="http://127.0.0.1:9/x", events=["item.approved"], secret="whsec_Zm96eg=="
    )
    scene.delivery = WebhookDelivery.objects.create(
        subscription=scene.webhook, event="item.approved", payload={}, status="failed"
    )
    memory_item_approve(item=into, author=owner, confirm_duplicate=True)  # release 1
    scene.release = Release.objects.get(bank=bank, number=1)
    scene.task_set = task_set_upload(bank=bank, name="fuzzed", body=b'{"id": "t1", "task": "Open the shop"}\n')
    return scene


def test_every_action_view_and_page_is_fuzzed_or_skipped_for_a_reason(scene):
    targets = ui_targets()
    actions = {t.name for t in targets if t.post_action}
    assert {"memories:item_approve", "accounts:team_invite", "accounts:token_revoke"} <= actions  # discovery works
    table = forms(scene)
    assert not actions & set(SKIPPED), "an action view is never skipped"
    unknown = {t.name for t in targets} - set(table) - set(SKIPPED)
    assert not unknown, f"add these views to FORMS (or, for a page with no input, to SKIPPED): {sorted(unknown)}"
    stale = (set(table) | set(SKIPPED)) - {t.name for t in targets}
    assert not stale, f"no such URL names any more: {sorted(stale)}"
    assert all(method == "post" for name in actions for method, _ in table[name])


@pytest.mark.parametrize("value_name", list(HOSTILE))
def test_every_ui_form_survives_hostile_values(client, scene, value_name):
    client.force_login(scene.owner)
    client.raise_request_exception = False  # a 500 is a status to report with the others
    value = HOSTILE[value_name]
    table = forms(scene)
    failures, reached = [], set()
    targets = [t for t in ui_targets() if t.name in table]
    assert targets
    for target in targets:
        url = _url(target, scene)
        for method, fields in table[target.name]:
            where = f"{method.upper()} {target.name}"
            neutral = _send(client, method, url, fields)
            if neutral.status_code in (404, 405) or neutral.status_code >= 500:
                failures.append(f"{where} with neutral values: {neutral.status_code} (not reached)")
            else:
                reached.add((target.name, method))
            for field in fields:
                if method == "get" and len(value) > 4000:
                    continue  # a URL of 1 MB is refused by every server before Django
                status = _send(client, method, url, {**fields, field: value}).status_code
                if status >= 500 or status == 405 or (status == 404 and field not in ID_FIELDS):
                    failures.append(f"{where} {field}={value_name}: {status}")
    assert not failures, failures
    assert reached == {(name, method) for name, entries in table.items() for method, _ in entries}


@pytest.mark.parametrize("value_name", ["nul", "surrogate", "deep-json", "megabyte", "crlf"])
def test_import_form_survives_hostile_files(client, owner, bank, value_name):
    client.force_login(owner)
    value = HOSTILE[value_name]
    url = reverse("memories:items_import", kwargs={"bank_id": bank.public_id})
    for content in (value, '{"title": "' + value + '", "description": "d", "content": "c"}'):
        upload = SimpleUploadedFile("f.jsonl", content.encode("utf-8", "surrogateescape"), "application/jsonl")
        assert client.post(url, {"file": upload}).status_code < 500
