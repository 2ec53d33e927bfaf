"""Release imports in a worker: the request checks the file (everything that can
refuse it, memories.releases.transfer) and stores it as a
ReleaseImport; the Celery task ``memories.release_import`` writes it. A bank
runs one import at a time. The page's import whose items have risk findings
waits (``confirming``) until the reviewer confirms them in a dialog."""

from __future__ import annotations

import uuid
from datetime import timedelta

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone

from accounts.models import Bank
from memories.releases.models import IMPORT_ACTIVE, ImportState, ReleaseImport
from memories.releases.transfer import release_import, release_import_check
from reasoningbank_site.celery import enqueue_on_commit
from reasoningbank_site.errors import Conflict, DomainError, NotFound, RisksNeedConfirmation

TASK = "memories.release_import"
CONFIRM_WITHIN = timedelta(hours=1)  # a page import waiting for its confirmation is dropped after this


class ImportRunning(Conflict):
    """The bank already runs an import; ``running`` is it (one at a time per bank)."""

    code = "import_running"

    def __init__(self, running: ReleaseImport):
        super().__init__(
            f"This bank is already importing a release (started {running.created_at:%Y-%m-%d %H:%M:%S} UTC, "
            f"{running.get_state_display().lower()}): wait for it to finish, then import again.",
            details={"id": str(running.public_id), "state": running.state},
        )
        self.running = running


@transaction.atomic
def _expire_stale(bank: Bank) -> None:
    """Fail ``bank``'s imports that no worker finished within RB_RELEASE_IMPORT_STALE_SECONDS (a task the
    broker lost), and drop page imports left waiting for a confirmation: neither may hold the bank's slot."""
    now = timezone.now()
    stale = now - timedelta(seconds=settings.RB_RELEASE_IMPORT_STALE_SECONDS)
    lost = ReleaseImport.objects.select_for_update(skip_locked=True).filter(
        bank=bank, state__in=IMPORT_ACTIVE, created_at__lt=stale
    )
    for job in lost:
        _finish(job, ImportState.FAILED, "No worker finished this import in time; import the file again.")
    ReleaseImport.objects.filter(bank=bank, state=ImportState.CONFIRMING, created_at__lt=now - CONFIRM_WITHIN).delete()


def release_import_running(*, bank: Bank) -> ReleaseImport | None:
    """``bank``'s import that holds its slot (queued or running), if any."""
    return ReleaseImport.objects.filter(bank=bank, state__in=IMPORT_ACTIVE).first()


@transaction.atomic
def _queue(job: ReleaseImport) -> ReleaseImport:
    """Save ``job`` as queued and enqueue its task after commit. Raises ImportRunning when the bank's slot is taken."""
    _expire_stale(job.bank)
    job.state = ImportState.QUEUED
    try:
        with transaction.atomic():
            job.save()
    except IntegrityError:
        running = release_import_running(bank=job.bank)
        if running is None:  # it ended in between: try once more
            job.save()
        else:
            raise ImportRunning(running) from None
    enqueue_on_commit(TASK, job.pk)
    return job


def release_import_start(
    *, bank: Bank, records: list, actor=None, token=None, confirm_risks: bool = False, confirming: bool = False
) -> ReleaseImport:
    """Check ``records`` (parse_release_lines) for import into ``bank`` and queue them for a worker.
    Raises what release_import_check raises (nothing is stored then), and ImportRunning when the bank is
    importing already. ``confirming`` (the page): items with risk findings do not raise; the import is
    stored waiting for the confirmation (state ``confirming``, its findings in ``risks``) instead."""
    _expire_stale(bank)
    running = release_import_running(bank=bank)
    if running is not None:  # answered before the file's risk scan, which takes seconds for a large file
        raise ImportRunning(running)
    try:
        checked = release_import_check(
            bank=bank, records=records, actor=actor, token=token, confirm_risks=confirm_risks
        )
    except RisksNeedConfirmation as exc:
        if not confirming:
            raise
        return ReleaseImport.objects.create(
            bank=bank,
            state=ImportState.CONFIRMING,
            records=records,
            items=len(records) - 1,
            risks=exc.details["items"],
            actor=actor,
            token=token,
            message=exc.message,
        )
    job = ReleaseImport(
        bank=bank, records=records, items=len(checked.rows), confirm_risks=confirm_risks, actor=actor, token=token
    )
    return _queue(job)


def release_import_confirm(*, bank: Bank, public_id, actor) -> ReleaseImport:
    """``actor`` read the risk findings of the page import ``public_id`` and confirms them: it is queued
    (recorded as confirmed by ``actor``). Raises NotFound for no such waiting import of ``actor``'s;
    ImportRunning as release_import_start."""
    job = release_import_get(bank=bank, public_id=public_id)
    if job.state != ImportState.CONFIRMING or job.actor_id != getattr(actor, "pk", None):
        raise NotFound("No import of yours is waiting for a confirmation.")
    job.confirm_risks, job.risks, job.message = True, [], ""
    return _queue(job)


def _public_id(value) -> uuid.UUID:
    try:
        return uuid.UUID(str(value))
    except ValueError:
        raise NotFound("No such release import.") from None


def release_import_cancel(*, bank: Bank, public_id, actor) -> None:
    """Drop the page import ``public_id`` that waits for ``actor``'s confirmation (nothing was written).
    Raises NotFound for an id that is not one."""
    ReleaseImport.objects.filter(
        bank=bank, public_id=_public_id(public_id), state=ImportState.CONFIRMING, actor_id=getattr(actor, "pk", None)
    ).delete()


def release_import_get(*, bank: Bank, public_id) -> ReleaseImport:
    """``bank``'s import ``public_id`` (a stale one marked failed first). Raises NotFound (another bank's too)."""
    key = _public_id(public_id)
    _expire_stale(bank)
    try:
        return ReleaseImport.objects.get(bank=bank, public_id=key)
    except ReleaseImport.DoesNotExist:
        raise NotFound("No such release import.") from None


def _finish(job: ReleaseImport, state: str, message: str, **counts) -> None:
    job.state, job.message, job.records, job.finished_at = state, message, [], timezone.now()
    for name, value in counts.items():
        setattr(job, name, value)
    job.save(update_fields=["state", "message", "records", "finished_at", *counts])


def release_import_run(*, import_id: int) -> str:
    """Write the queued import ``import_id`` (the worker's part): running, then done with its counts and
    release, or failed with the refusal's message (nothing written then). Idempotent: an import that
    ended, or that another worker holds, is left alone. Returns its state."""
    ReleaseImport.objects.filter(pk=import_id, state=ImportState.QUEUED).update(
        state=ImportState.RUNNING, started_at=timezone.now()
    )
    with transaction.atomic():
        job = (
            ReleaseImport.objects.select_for_update(skip_locked=True, of=("self",))
            .select_related("bank", "actor", "token")
            .filter(pk=import_id, state=ImportState.RUNNING)
            .first()
        )
        if job is None:
            return ""
        try:
            with transaction.atomic():
                outcome, counts = release_import(
                    bank=job.bank,
                    records=job.records,
                    actor=job.actor,
                    token=job.token,
                    confirm_risks=job.confirm_risks,
                )
        except DomainError as exc:
            _finish(job, ImportState.FAILED, exc.message)
        else:
            _finish(
                job,
                ImportState.DONE,
                outcome.message,
                created=counts.created,
                kept=counts.kept,
                archived=counts.archived,
                release=outcome.release.number if outcome.release else None,
            )
        return job.state
