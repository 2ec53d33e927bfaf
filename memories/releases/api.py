"""The releases API (scope ``review``): a bank's releases, their diffs, and
the moves a reviewer makes on the release page (publish, canary, promote,
rollback, the publishing mode), plus a release's export and import (checked
in the request, written by a worker: 202 and a status URL). The same
services as the pages; a move to where a label already points answers 200
with ``noop: true``."""

from __future__ import annotations

import json
from datetime import datetime
from uuid import UUID

from django.conf import settings
from django.db import transaction
from django.db.models import prefetch_related_objects
from django.http import StreamingHttpResponse
from ninja import Field, Router, Schema, Status

from accounts.tokens.auth import TokenAuth, api_responses
from memories.releases.imports import ImportRunning, release_import_get, release_import_start
from memories.releases.labels import (
    release_canary_set,
    release_canary_stop,
    release_policy_set,
    release_promote,
    release_rollback,
)
from memories.releases.models import Release
from memories.releases.publishing import release_gate_set, release_mode_set, release_publish
from memories.releases.schemas import (
    CanaryIn,
    MoveIn,
    OverrideIn,
    PublishIn,
    ReleaseMoveOut,
    ReleaseSettingsIn,
    ReleasesOut,
    release_out,
)
from memories.releases.selectors import (
    bank_releasing,
    release_diff,
    release_export,
    release_lookup,
    release_previous,
    releases_list,
)
from memories.releases.transfer import parse_release_lines, release_import_too_large
from reasoningbank_site.errors import Invalid
from reasoningbank_site.request_body import body_within

router = Router(tags=["releases"])
auth = TokenAuth(scope="review")


def _move(bank, message: str, *, noop: bool = False, release: Release | None = None) -> ReleaseMoveOut:
    releasing = bank_releasing(bank=bank)
    return ReleaseMoveOut(
        message=message,
        noop=noop,
        production=releasing.production.number if releasing.production_id else None,
        canary=releasing.canary.number if releasing.canary_id else None,
        canary_fraction=releasing.canary_fraction,
        release=release.number if release else None,
    )


@router.get("/releases", auth=auth, response=api_responses({200: ReleasesOut}), summary="The bank's releases")
def releases(request):
    """Newest first, with the labels (production, canary) and the publishing mode."""
    releasing = bank_releasing(bank=request.bank)
    listed = releases_list(bank=request.bank)
    prefetch_related_objects(listed, "evaluations")  # every release's evaluations in one query
    return ReleasesOut(
        mode=releasing.mode,
        production=releasing.production.number if releasing.production_id else None,
        canary=releasing.canary.number if releasing.canary_id else None,
        canary_fraction=releasing.canary_fraction,
        auto_rollback=releasing.auto_rollback,
        evaluation_gate=releasing.evaluation_gate,
        releases=[release_out(releasing, r) for r in listed],
    )


@router.get(
    "/releases/{release_id}/diff", auth=auth, response=api_responses({200: dict}, 404), summary="A release's diff"
)
def release_diff_get(request, release_id: str, against: str | None = None):
    """Items added, changed (with word diffs: [op, text] runs, op equal, delete or insert) and removed from
    release `against` (default: the one before) to release `number`."""
    release = release_lookup(bank=request.bank, ref=release_id)
    old = release_lookup(bank=request.bank, ref=against) if against else release_previous(release=release)
    return {"from": old.number if old else None, "to": release.number, **release_diff(old=old, new=release).as_dict()}


@router.post(
    "/releases/publish",
    auth=auth,
    response=api_responses({200: ReleaseMoveOut}, 409, 413),
    summary="Publish the draft",
)
def releases_publish(request, payload: PublishIn):
    """Under an evaluation gate (or with `candidate: true`) the release is written as a candidate, served to
    nobody (the message says so; `GET /releases` marks it `candidate`), unless an owner's token overrides;
    a canary share is then 409 ``evaluation_required``."""
    outcome = release_publish(
        bank=request.bank,
        token=request.api_token,
        note=payload.note,
        canary_fraction=payload.canary_fraction,
        candidate=payload.candidate,
        override=payload.override,
        override_reason=payload.override_reason,
    )
    return _move(request.bank, outcome.message, noop=outcome.noop, release=outcome.release)


@router.post(
    "/releases/{release_id}/rollback",
    auth=auth,
    response=api_responses({200: ReleaseMoveOut}, 404, 409, 413),
    summary="Make a release production",
)
def releases_rollback(request, release_id: str, payload: OverrideIn | None = None):
    """A release never served before is held by the evaluation gate (409 ``evaluation_required``)."""
    number = release_lookup(bank=request.bank, ref=release_id).number
    payload = payload or OverrideIn()
    message, noop = release_rollback(
        bank=request.bank,
        number=number,
        token=request.api_token,
        override=payload.override,
        override_reason=payload.override_reason,
    )
    return _move(request.bank, message, noop=noop)


@router.post(
    "/releases/{release_id}/canary",
    auth=auth,
    response=api_responses({200: ReleaseMoveOut}, 404, 409, 413),
    summary="Serve a release as the canary",
)
def releases_canary(request, release_id: str, payload: CanaryIn):
    number = release_lookup(bank=request.bank, ref=release_id).number
    message = release_canary_set(
        bank=request.bank,
        number=number,
        fraction=payload.fraction,
        token=request.api_token,
        override=payload.override,
        override_reason=payload.override_reason,
    )
    return _move(request.bank, message)


@router.post(
    "/releases/canary/promote",
    auth=auth,
    response=api_responses({200: ReleaseMoveOut}, 409, 413),
    summary="Promote the canary",
)
def releases_promote(request, payload: OverrideIn | None = None):
    payload = payload or OverrideIn()
    message = release_promote(
        bank=request.bank, token=request.api_token, override=payload.override, override_reason=payload.override_reason
    )
    return _move(request.bank, message or "There is no canary to promote.", noop=message is None)


@router.post(
    "/releases/canary/stop",
    auth=auth,
    response=api_responses({200: ReleaseMoveOut}, 413),
    summary="Roll the canary back",
)
def releases_canary_stop(request, payload: MoveIn | None = None):
    message = release_canary_stop(bank=request.bank, token=request.api_token)
    return _move(request.bank, message or "There is no canary: nothing to roll back.", noop=message is None)


@router.put(
    "/releases/settings",
    auth=auth,
    response=api_responses({200: ReleaseMoveOut}, 409, 413),
    summary="Publishing mode, automatic rollback and the evaluation gate",
)
def releases_settings(request, payload: ReleaseSettingsIn):
    """All or nothing: a field refused (say automatic publishing with the evaluation gate on) changes none."""
    messages, noop = [], True
    with transaction.atomic():
        if payload.evaluation_gate is not None:  # first: a gate switches the bank to manual
            message, same = release_gate_set(bank=request.bank, gate=payload.evaluation_gate, token=request.api_token)
            messages.append(message)
            noop = noop and same
        if payload.mode is not None:
            outcome = release_mode_set(bank=request.bank, mode=payload.mode, token=request.api_token)
            messages.append(outcome.message)
            noop = noop and outcome.noop
        if payload.auto_rollback is not None:
            message = release_policy_set(
                bank=request.bank, auto_rollback=payload.auto_rollback, token=request.api_token
            )
            messages.append(message)
            noop = noop and message == "No change."
    if not messages:
        raise Invalid("Send mode, auto_rollback and/or evaluation_gate.")
    return _move(request.bank, " ".join(messages), noop=noop)


@router.get(
    "/releases/{release_id}/export",
    auth=auth,
    response=api_responses({200: None}, 404),
    summary="Export a release (JSONL)",
)
def releases_export(request, release_id: str):
    """A header line `{"release": {...}}`, then one item per line (the items export's fields, as released)."""
    release = release_lookup(bank=request.bank, ref=release_id)
    release.bank = request.bank
    lines = (json.dumps(row, ensure_ascii=False) + "\n" for row in release_export(release=release))
    response = StreamingHttpResponse(lines, content_type="application/x-ndjson")
    response["Content-Disposition"] = f'attachment; filename="{request.bank.slug}-release-{release_id}.jsonl"'
    return response


class ImportOut(Schema):
    id: UUID
    state: str = Field(
        ..., description="queued, running, done or failed (confirming: a page import awaiting its confirmation)."
    )
    status_url: str = Field(..., description="Poll it (GET) until the state is done or failed.")
    items: int = Field(..., description="Item lines in the file.")
    created: int = Field(0, description="Items created approved (once done).")
    kept: int = Field(0, description="Approved items of the bank already equal to one in the file.")
    archived: int = Field(0, description="Approved items of the bank not in the file, archived.")
    release: int | None = Field(None, description="The release published, now production (once done; null: a no-op).")
    message: str = Field("", description="The outcome, or why it failed.")
    created_at: datetime
    started_at: datetime | None = None
    finished_at: datetime | None = None


def _import_out(job) -> ImportOut:
    return ImportOut(
        id=job.public_id,
        state=job.state,
        status_url=f"/api/v1/releases/imports/{job.public_id}",
        items=job.items,
        created=job.created,
        kept=job.kept,
        archived=job.archived,
        release=job.release,
        message=job.message,
        created_at=job.created_at,
        started_at=job.started_at,
        finished_at=job.finished_at,
    )


@router.post(
    "/releases/import",
    auth=auth,
    response=api_responses({202: ImportOut}, 409, 413),
    summary="Import a release (JSONL), in the background",
    openapi_extra={
        "requestBody": {
            "required": True,
            "description": "A release export: its header line, then one item per line.",
            # Any content type is read as JSON Lines (application/x-ndjson is what the export answers).
            "content": {"text/plain": {"schema": {"type": "string"}}},
        }
    },
)
def releases_import(request, confirm_risks: bool = False):
    """The body is a release export: once a worker has written it, it is the bank's next release and
    production. The file is checked here (413 over RB_RELEASE_IMPORT_MAX_BYTES; 422 for a bad line; 403
    ``several_decisions_required`` under a review policy of several decisions per item; 409
    ``risks_need_confirmation`` listing the items with risk findings in ``items``, unless
    ``?confirm_risks=true``, then recorded as confirmed by this token), then queued: 202 with its
    ``status_url``. One import per bank at a time: another answers 409 ``import_running`` with the running
    one's ``status_url``."""
    body = body_within(request, limit=settings.RB_RELEASE_IMPORT_MAX_BYTES, too_large=release_import_too_large)
    records = parse_release_lines(body)
    try:
        job = release_import_start(
            bank=request.bank, records=records, token=request.api_token, confirm_risks=confirm_risks
        )
    except ImportRunning as exc:
        exc.details["status_url"] = f"/api/v1/releases/imports/{exc.running.public_id}"
        raise
    return Status(202, _import_out(job))


@router.get(
    "/releases/imports/{import_id}",
    auth=auth,
    response=api_responses({200: ImportOut}, 404),
    summary="A release import's state and counts",
)
def releases_import_status(request, import_id: UUID):
    """Queued, running, done (with the counts and the release it published) or failed (with why)."""
    return _import_out(release_import_get(bank=request.bank, public_id=import_id))
