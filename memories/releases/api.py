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
from memories.releases.models import NOTE_MAX, PublishMode, Release
from memories.releases.publishing import release_mode_set, release_publish
from memories.releases.selectors import (
    bank_releasing,
    release_diff,
    release_export,
    release_lookup,
    release_previous,
    releases_list,
)
from memories.releases.transfer import parse_release_lines, release_import_too_large
from memories.serving.schemas import BodyIn
from reasoningbank_site.errors import Invalid

router = Router(tags=["releases"])
auth = TokenAuth(scope="review")


class ReleaseOut(Schema):
    id: UUID = Field(..., description="The release's id; paths take it or the number.")
    number: int = Field(..., examples=[7])
    note: str = Field("", examples=["Login lessons reviewed"])
    source: str = Field(..., description="automatic, published or imported.", examples=["published"])
    items: int = Field(..., description="Items in the release.", examples=[42])
    added: int
    changed: int
    removed: int
    created_at: datetime
    labels: list[str] = Field(default_factory=list, description="production and/or canary.", examples=[["canary"]])


class ReleasesOut(Schema):
    mode: str = Field(..., description="automatic (every change published at once) or manual.")
    production: int | None = Field(
        None, description="The release served to every retrieval not held out or in the canary."
    )
    canary: int | None = None
    canary_fraction: float = Field(0, description="The canary's share of all retrievals.")
    auto_rollback: bool = False
    releases: list[ReleaseOut]


class ReleaseMoveOut(Schema):
    message: str
    noop: bool = Field(False, description="True when nothing changed (nothing to publish, already production…).")
    production: int | None = None
    canary: int | None = None
    canary_fraction: float = 0
    release: int | None = Field(None, description="The release published or imported, if any.")


class PublishIn(BodyIn):
    note: str = Field("", max_length=NOTE_MAX, examples=["Login lessons reviewed"])
    canary_fraction: float | None = Field(
        None, description="Publish as the canary for this share of all retrievals (0.01–0.99) instead of production."
    )


class CanaryIn(BodyIn):
    fraction: float = Field(
        ..., description="Share of all retrievals served the canary (with the holdout ≤ 1).", examples=[0.1]
    )


class ReleaseSettingsIn(BodyIn):
    mode: PublishMode | None = None
    auto_rollback: bool | None = Field(None, description="Roll a significantly worse canary back on its own.")


class MoveIn(BodyIn):
    """A move that takes no fields: an empty body (or none); any field is a 422 naming it."""


def _labels(releasing, release: Release) -> list[str]:
    return [
        name
        for name, pk in (("production", releasing.production_id), ("canary", releasing.canary_id))
        if pk == release.pk
    ]


def _release_out(releasing, release: Release) -> ReleaseOut:
    return ReleaseOut(
        id=release.public_id,
        number=release.number,
        note=release.note,
        source=release.source,
        items=release.item_count,
        added=release.added,
        changed=release.changed,
        removed=release.removed,
        created_at=release.created_at,
        labels=_labels(releasing, release),
    )


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
    return ReleasesOut(
        mode=releasing.mode,
        production=releasing.production.number if releasing.production_id else None,
        canary=releasing.canary.number if releasing.canary_id else None,
        canary_fraction=releasing.canary_fraction,
        auto_rollback=releasing.auto_rollback,
        releases=[_release_out(releasing, r) for r in releases_list(bank=request.bank)],
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
    "/releases/publish", auth=auth, response=api_responses({200: ReleaseMoveOut}, 413), summary="Publish the draft"
)
def releases_publish(request, payload: PublishIn):
    outcome = release_publish(
        bank=request.bank, token=request.api_token, note=payload.note, canary_fraction=payload.canary_fraction
    )
    return _move(request.bank, outcome.message, noop=outcome.noop, release=outcome.release)


@router.post(
    "/releases/{release_id}/rollback",
    auth=auth,
    response=api_responses({200: ReleaseMoveOut}, 404, 413),
    summary="Make a release production",
)
def releases_rollback(request, release_id: str, payload: MoveIn | None = None):
    number = release_lookup(bank=request.bank, ref=release_id).number
    message, noop = release_rollback(bank=request.bank, number=number, token=request.api_token)
    return _move(request.bank, message, noop=noop)


@router.post(
    "/releases/{release_id}/canary",
    auth=auth,
    response=api_responses({200: ReleaseMoveOut}, 404, 413),
    summary="Serve a release as the canary",
)
def releases_canary(request, release_id: str, payload: CanaryIn):
    number = release_lookup(bank=request.bank, ref=release_id).number
    message = release_canary_set(bank=request.bank, number=number, fraction=payload.fraction, token=request.api_token)
    return _move(request.bank, message)


@router.post(
    "/releases/canary/promote",
    auth=auth,
    response=api_responses({200: ReleaseMoveOut}, 413),
    summary="Promote the canary",
)
def releases_promote(request, payload: MoveIn | None = None):
    message = release_promote(bank=request.bank, token=request.api_token)
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
    response=api_responses({200: ReleaseMoveOut}, 413),
    summary="Publishing mode and automatic rollback",
)
def releases_settings(request, payload: ReleaseSettingsIn):
    messages, noop = [], True
    if payload.mode is not None:
        outcome = release_mode_set(bank=request.bank, mode=payload.mode, token=request.api_token)
        messages.append(outcome.message)
        noop = noop and outcome.noop
    if payload.auto_rollback is not None:
        message = release_policy_set(bank=request.bank, auto_rollback=payload.auto_rollback, token=request.api_token)
        messages.append(message)
        noop = noop and message == "No change."
    if not messages:
        raise Invalid("Send mode and/or auto_rollback.")
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
    try:
        length = int(request.META.get("CONTENT_LENGTH") or 0)
    except ValueError:
        length = 0
    if length > settings.RB_RELEASE_IMPORT_MAX_BYTES:
        raise release_import_too_large(length)
    # Read from the stream: the release import's limit is not the API's (DATA_UPLOAD_MAX_MEMORY_SIZE).
    body = request.read(settings.RB_RELEASE_IMPORT_MAX_BYTES + 1)
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
