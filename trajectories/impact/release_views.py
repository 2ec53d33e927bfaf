"""The release pages (session auth): a bank's releases with their labels,
the draft, the canary's verdict, and the moves a reviewer makes from there
(publish, canary, promote, roll back); a release's diff; its export and import
(checked here, written by a worker, its progress polled)."""

from __future__ import annotations

import json

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import Http404, StreamingHttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_http_methods

from accounts.access import bank_for_user
from accounts.models import Role
from memories.releases.imports import (
    release_import_cancel,
    release_import_confirm,
    release_import_get,
    release_import_start,
)
from memories.releases.labels import (
    release_canary_set,
    release_canary_stop,
    release_notice_dismiss,
    release_policy_set,
    release_promote,
    release_rollback,
)
from memories.releases.models import EvaluationGate, ImportState, PublishMode, ReleaseImport
from memories.releases.publishing import release_gate_set, release_mode_set, release_publish
from memories.releases.selectors import (
    bank_releasing,
    draft_diff,
    release_diff,
    release_export,
    release_lookup,
    release_previous,
    releases_list,
)
from memories.releases.transfer import parse_release_lines, release_import_too_large
from memories.review.policy import decides_alone
from memories.serving.lists import served_items
from reasoningbank_site.errors import DomainError, Invalid, NotFound
from reasoningbank_site.replica import reads_from_replica
from reasoningbank_site.search_paging import capped_count
from reasoningbank_site.text import counted
from reasoningbank_site.values import ascii_number
from trajectories.impact.release_evaluations import evaluations_url, release_evaluations_attach
from trajectories.impact.releases import canary_verdict

ADMIN_ACTIONS = frozenset({"mode", "auto_rollback", "evaluation_gate"})
IMPORT_ACTIONS = frozenset({"import", "import_confirm", "import_cancel"})


def _release(bank, ref):
    """Release ``ref`` (its number or id) of ``bank``, else 404."""
    try:
        return release_lookup(bank=bank, ref=ref)
    except NotFound:
        raise Http404("No such release.") from None


def _percent(value: str, name: str) -> float:
    try:
        number = float((value or "").strip().rstrip("%"))
    except ValueError:
        raise Invalid(f"{name}: a percentage, e.g. 10.") from None
    return number / 100


def _number(value: str) -> int:
    number = ascii_number(value)
    if number is None:
        raise Invalid("Choose a release.")
    return number


def _import(request, bank, action: str) -> tuple[str, ReleaseImport | None]:
    """An import move: the message to show, and the import waiting for the reviewer to confirm its risk
    findings (a dialog), if any. The file is checked here; a worker writes it. Raises DomainError."""
    if action == "import_cancel":
        release_import_cancel(bank=bank, public_id=request.POST.get("import"), actor=request.user)
        return "Import cancelled: nothing was written.", None
    if action == "import_confirm":
        job = release_import_confirm(bank=bank, public_id=request.POST.get("import"), actor=request.user)
    else:
        upload = request.FILES.get("file")
        if upload is None:
            raise Invalid("Choose a release file (.jsonl) to import.")
        if upload.size > settings.RB_RELEASE_IMPORT_MAX_BYTES:
            raise release_import_too_large(upload.size)
        records = parse_release_lines(upload.read())
        job = release_import_start(bank=bank, records=records, actor=request.user, confirming=True)
        if job.state == ImportState.CONFIRMING:
            return "", job
    return f"Importing {counted(job.items, 'item')} in the background: the progress is below.", None


def _act(request, bank, action: str) -> str:
    """Run one POSTed move; returns the message to show. Raises DomainError."""
    post, user = request.POST, request.user
    # An owner's override of the evaluation gate, with its reason (the view refuses it to anyone else).
    gate = {"override": post.get("override") == "on", "override_reason": post.get("override_reason", "")}
    if action == "publish":
        share = post.get("canary_percent", "").strip()
        fraction = _percent(share, "canary share") if share else None
        candidate = post.get("candidate") == "on"
        note = post.get("note", "")
        return release_publish(
            bank=bank, actor=user, note=note, canary_fraction=fraction, candidate=candidate, **gate
        ).message
    if action == "canary":
        number = _number(post.get("number"))
        share = _percent(post.get("canary_percent", ""), "canary share")
        return release_canary_set(bank=bank, number=number, fraction=share, actor=user, **gate)
    if action == "promote":
        return release_promote(bank=bank, actor=user, **gate) or "There is no canary to promote."
    if action == "stop":
        return release_canary_stop(bank=bank, actor=user) or "There is no canary: nothing to roll back."
    if action == "rollback":
        return release_rollback(bank=bank, number=_number(post.get("number")), actor=user, **gate)[0]
    if action == "evaluation_gate":
        return release_gate_set(bank=bank, gate=post.get("evaluation_gate", ""), actor=user)[0]
    if action == "mode":
        return release_mode_set(bank=bank, mode=post.get("mode", ""), actor=user).message
    if action == "auto_rollback":
        return release_policy_set(bank=bank, auto_rollback=post.get("auto_rollback") == "on", actor=user)
    if action == "dismiss":
        release_notice_dismiss(bank=bank)
        return "Notice dismissed."
    raise Invalid(f"Unknown action {action[:40]!r}.")


@login_required
@require_http_methods(["GET", "POST"])
def releases(request, bank_id):
    """GET: labels, the draft, the canary's verdict and the releases. POST:
    one move (reviewers; the publishing mode and automatic rollback: admins).
    A refused move re-renders the page with its message as the form error."""
    bank, me = bank_for_user(request, bank_id)
    error = confirming = None
    if request.method == "POST":
        action = request.POST.get("action", "")
        needed = Role.ADMIN if action in ADMIN_ACTIONS else Role.REVIEWER
        if not me.has_role(needed):
            raise PermissionDenied(f"Only {needed}s and above change releases this way.")
        if request.POST.get("override") == "on" and not me.has_role(Role.OWNER):
            raise PermissionDenied("Only an owner may override the evaluation gate.")
        try:
            if action in IMPORT_ACTIONS:
                message, confirming = _import(request, bank, action)
            else:
                message = _act(request, bank, action)
        except DomainError as exc:
            error = str(exc)
        else:
            if confirming is None:
                messages.success(request, message)
                return redirect("trajectories:releases", bank_id=bank.public_id)
    releasing = bank_releasing(bank=bank)
    context = {
        "bank": bank,
        "releasing": releasing,
        "releases": release_evaluations_attach(
            bank=bank, releases=releases_list(bank=bank), gate=releasing.evaluation_gate
        ),
        # An automatic bank publishes every change as it is made: its draft is its newest release.
        "draft": draft_diff(bank=bank) if releasing.mode == PublishMode.MANUAL else None,
        # Counted up to a cap ("10000+"): an exact count of a big bank's served items read every one of them.
        "production_serves": capped_count(served_items(bank=bank).items),
        "verdict": canary_verdict(bank=bank, releasing=releasing),
        "can_review": me.has_role(Role.REVIEWER),
        "can_admin": me.has_role(Role.ADMIN),
        "can_own": me.has_role(Role.OWNER),
        "gates": EvaluationGate.choices,
        "evaluations_url": evaluations_url(bank),
        "can_import": me.has_role(Role.REVIEWER) and decides_alone(bank=bank, user=request.user),
        "modes": PublishMode.choices,
        "error": error,
        "form": request.POST if error else {},
        "confirming": confirming,
        "import_job": ReleaseImport.objects.filter(bank=bank).exclude(state=ImportState.CONFIRMING).first(),
    }
    return render(request, "trajectories/releases.html", context)


@login_required
@require_GET
def release_import_status(request, bank_id, import_id):
    """The import's progress panel (polled by htmx until it is done or failed)."""
    bank, _ = bank_for_user(request, bank_id)
    try:
        job = release_import_get(bank=bank, public_id=import_id)
    except NotFound:
        raise Http404("No such import.") from None
    return render(request, "trajectories/release_import.html", {"bank": bank, "import_job": job})


@login_required
@require_GET
def release_detail(request, bank_id, release_id):
    """Release ``release_id``: what changed from the one before (or ``?against=``), with word diffs."""
    bank, me = bank_for_user(request, bank_id)
    release = _release(bank, release_id)
    against, error = request.GET.get("against", ""), None
    old = release_previous(release=release)
    if against:
        try:
            old = release_lookup(bank=bank, ref=against)
        except (Invalid, NotFound) as exc:
            error = f"{exc} Compared with the release before instead."
    releasing = bank_releasing(bank=bank)
    release_evaluations_attach(bank=bank, releases=[release], gate=releasing.evaluation_gate)
    context = {
        "bank": bank,
        "release": release,
        "old": old,
        "diff": release_diff(old=old, new=release),
        "releasing": releasing,
        "error": error,
        "can_review": me.has_role(Role.REVIEWER),
        "can_own": me.has_role(Role.OWNER),
        "evaluations_url": evaluations_url(bank),
    }
    return render(request, "trajectories/release_detail.html", context)


@login_required
@require_GET
@reads_from_replica
def release_export_download(request, bank_id, release_id):
    """Release ``release_id`` as JSON Lines: its header, then its items as released."""
    bank, _ = bank_for_user(request, bank_id)
    release = _release(bank, release_id)
    release.bank = bank
    lines = (json.dumps(row, ensure_ascii=False) + "\n" for row in release_export(release=release))
    response = StreamingHttpResponse(lines, content_type="application/x-ndjson")
    response["Content-Disposition"] = (
        f'attachment; filename="{bank.team.slug}-{bank.slug}-release-{release.number}.jsonl"'
    )
    return response
