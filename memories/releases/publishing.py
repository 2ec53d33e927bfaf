"""Publishing a bank's draft as a release: by hand (with a note, as
production or as a canary), or at once after every change of an approved
item (automatic mode, the default: ``releases_items_changed``, called where
every item change is recorded)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from django.db import transaction

from accounts.audit.actions import AuditAction
from accounts.audit.services import audit_record
from accounts.models import Bank, Role
from memories.items.models import ItemStatus, MemoryItem
from memories.releases.gate import gate_refuses_new_release, release_gate_check, role_at_least
from memories.releases.labels import canary_start, releasing_locked, serving_sync
from memories.releases.models import (
    NOTE_MAX,
    BankReleasing,
    EvaluationGate,
    PublishMode,
    Release,
    ReleaseMember,
    ReleaseSource,
)
from memories.releases.selectors import draft_versions, open_versions, versions_text_changed
from reasoningbank_site.errors import Conflict, Forbidden, Invalid


@dataclass
class ReleaseOutcome:
    """What a release action did: ``release`` (the new or labelled release),
    or ``noop`` with the message saying why nothing changed."""

    release: Release | None
    message: str
    noop: bool = False
    candidate: bool = False  # written without a label: it reaches agents only once it is made production or canary


def release_write(
    *,
    releasing: BankReleasing,
    source: str,
    note: str = "",
    actor=None,
    token=None,
    item_ids: Iterable[int] | None = None,
) -> Release | None:
    """Write the next release of the bank from its draft (the items
    ``item_ids`` only, when given and the bank already has a release), or
    None when the draft equals the newest release. Only the changes are
    written: the changed and removed items' membership rows are closed and
    the added and changed ones opened."""
    bank = releasing.bank
    scope = None if releasing.latest == 0 or item_ids is None else list(item_ids)
    draft = draft_versions(bank=bank, item_ids=scope)
    current = open_versions(bank=bank, item_ids=scope)
    added = [pk for pk in draft if pk not in current]
    removed = [pk for pk in current if pk not in draft]
    changed = versions_text_changed(
        {pk: (current[pk], draft[pk]) for pk in draft if pk in current and current[pk] != draft[pk]}
    )
    if not (added or removed or changed):
        return None
    number = releasing.latest + 1
    before = Release.objects.filter(bank=bank, number=releasing.latest).values_list("item_count", flat=True).first()
    release = Release.objects.create(
        bank=bank,
        number=number,
        note=note,
        source=source,
        item_count=(before or 0) + len(added) - len(removed),
        added=len(added),
        changed=len(changed),
        removed=len(removed),
        created_by=actor,
        whole_draft=scope is None,
    )
    ReleaseMember.objects.filter(bank=bank, removed_in__isnull=True, item_id__in=[*removed, *changed]).update(
        removed_in=number
    )
    ReleaseMember.objects.bulk_create(
        [ReleaseMember(bank=bank, item_id=pk, version=draft[pk], added_in=number) for pk in [*added, *changed]]
    )
    releasing.latest = number
    releasing.save(update_fields=["latest", "updated_at"])
    audit_record(
        action=AuditAction.RELEASE_PUBLISH,
        bank=bank,
        user=actor,
        token=token,
        obj=release,
        after={
            "number": number,
            "source": source,
            "note": note,
            "items": release.item_count,
            "added": len(added),
            "changed": len(changed),
            "removed": len(removed),
        },
    )
    return release


@transaction.atomic
def release_publish(
    *,
    bank: Bank,
    actor=None,
    note: str = "",
    token=None,
    canary_fraction: float | None = None,
    candidate: bool = False,
    override: bool = False,
    override_reason: str = "",
) -> ReleaseOutcome:
    """Publish ``bank``'s draft as its next release, with ``note``: it becomes
    production, or, with ``canary_fraction``, the canary served to that share
    of retrievals (see release_canary_set; the bank then publishes by hand).
    With ``candidate``, or under an evaluation gate without ``override``, it is
    written as a candidate: no label, served to nobody until it passes an
    evaluation (memories.releases.gate). Audited. A draft equal to the newest
    release publishes nothing: a no-op outcome saying so. Raises Invalid for a
    note over NOTE_MAX characters, a refused canary share or a canary share
    for a candidate; Conflict
    (``evaluation_required``) for a canary share under the gate; what
    release_gate_check raises for an override."""
    note = (note or "").strip()
    if len(note) > NOTE_MAX:
        raise Invalid(f"note: at most {NOTE_MAX} characters (got {len(note)}).")
    if candidate and canary_fraction is not None:
        raise Invalid("Choose either a canary share or a candidate (served to nobody), not both.")
    releasing = releasing_locked(bank=bank)
    if canary_fraction is not None:
        gate_refuses_new_release(releasing=releasing, doing="made the canary", override=override)
    release = release_write(releasing=releasing, source=ReleaseSource.PUBLISHED, note=note, actor=actor, token=token)
    if release is None:
        return ReleaseOutcome(
            None, f"Nothing to publish: the draft is release {releasing.latest} as it stands.", noop=True
        )
    gated = releasing.evaluation_gate != EvaluationGate.OFF
    if candidate or (gated and not override):
        message = f"Release {release.number} written as a candidate: run an evaluation of it before it reaches agents."
        return ReleaseOutcome(release, message, candidate=True)
    doing = "published" if canary_fraction is None else "made the canary"
    release_gate_check(
        releasing=releasing,
        release=release,
        override=override,
        reason=override_reason,
        doing=doing,
        actor=actor,
        token=token,
    )
    if canary_fraction is not None:
        canary_start(releasing=releasing, release=release, fraction=canary_fraction, actor=actor, token=token)
        return ReleaseOutcome(release, f"Release {release.number} published as the canary.")
    releasing.production = release
    releasing.save(update_fields=["production", "updated_at"])
    serving_sync(releasing)
    return ReleaseOutcome(release, f"Release {release.number} published; it is now production.")


@transaction.atomic
def release_mode_set(*, bank: Bank, mode: str, actor=None, token=None) -> ReleaseOutcome:
    """Publish ``bank`` automatically or by hand (audited). Switching to
    automatic publishes the draft at once, makes the newest release
    production and stops any canary. Raises Invalid for an unknown mode."""
    if mode not in PublishMode.values:
        raise Invalid(f"mode: one of {', '.join(PublishMode.values)} (got {mode!r}).")
    releasing = releasing_locked(bank=bank)
    if mode == PublishMode.AUTOMATIC and releasing.evaluation_gate != EvaluationGate.OFF:
        raise Conflict(
            "An automatic publish serves every change at once, so nothing could be evaluated first: "
            "turn the evaluation gate off before publishing automatically.",
            code="evaluation_gate_on",
        )
    if releasing.mode == mode:
        return ReleaseOutcome(
            None, f"The bank already publishes {'automatically' if mode == 'automatic' else 'by hand'}.", noop=True
        )
    before = releasing.mode
    releasing.mode = mode
    releasing.save(update_fields=["mode", "updated_at"])
    release = None
    if mode == PublishMode.AUTOMATIC:
        release = release_write(releasing=releasing, source=ReleaseSource.AUTOMATIC, actor=actor, token=token)
        newest = release or Release.objects.filter(bank=bank, number=releasing.latest).first()
        releasing.production = newest
        releasing.canary, releasing.canary_fraction, releasing.canary_started_at = None, 0, None
        releasing.save(update_fields=["production", "canary", "canary_fraction", "canary_started_at", "updated_at"])
    serving_sync(releasing)
    audit_record(
        action=AuditAction.RELEASE_SET_MODE,
        bank=bank,
        user=actor,
        token=token,
        before={"mode": before},
        after={"mode": mode},
    )
    word = "automatically: every change is published at once" if mode == PublishMode.AUTOMATIC else "by hand"
    return ReleaseOutcome(release, f"The bank now publishes {word}.")


@transaction.atomic
def release_gate_set(*, bank: Bank, gate: str, actor=None, token=None) -> tuple[str, bool]:
    """Set ``bank``'s evaluation gate (audited). A gate other than off switches the bank to publishing
    by hand: an automatic publish could never be evaluated first. A token changes it only when an admin
    or owner created it. Returns (message, noop). Raises Invalid for an unknown gate, Forbidden."""
    if gate not in EvaluationGate.values:
        raise Invalid(f"evaluation_gate: one of {', '.join(EvaluationGate.values)} (got {str(gate)[:40]!r}).")
    if actor is None and not role_at_least(bank=bank, role=Role.ADMIN, actor=None, token=token):
        raise Forbidden(
            "Only admins and owners change the evaluation gate (an API token: one an admin or owner created).",
            code="admin_required",
        )
    releasing = releasing_locked(bank=bank)
    if releasing.evaluation_gate == gate:
        return "No change.", True
    before = {"evaluation_gate": releasing.evaluation_gate, "mode": releasing.mode}
    releasing.evaluation_gate = gate
    switched = gate != EvaluationGate.OFF and releasing.mode == PublishMode.AUTOMATIC
    if switched:
        releasing.mode = PublishMode.MANUAL
    releasing.save(update_fields=["evaluation_gate", "mode", "updated_at"])
    serving_sync(releasing)
    audit_record(
        action=AuditAction.RELEASE_SET_EVALUATION_GATE,
        bank=bank,
        user=actor,
        token=token,
        obj=bank,
        before=before,
        after={"evaluation_gate": gate, "mode": releasing.mode},
    )
    if gate == EvaluationGate.OFF:
        return "Releases are published without an evaluation again.", False
    message = f"Releases now need a passing evaluation ({EvaluationGate(gate).label.split(': ', 1)[1]}) "
    message += "before they reach agents."
    if switched:
        message += " The bank now publishes by hand: an automatic publish could never be evaluated first."
    return message, False


# Versions that change whether an approved item may be served, without changing its status or text.
SERVING_ACTIONS = frozenset({"proposed-for-retirement", "kept", "validity"})
RELEASED_FIELDS = ("title", "description", "content", "status", "tags")


def release_may_change(*, previous, version) -> bool:
    """Whether the item version ``version`` (after ``previous``, None for a
    new item) may change what a release holds: its status, text or tags
    changed, or its serving state (suspension, validity). A supporting
    distillation, a flag or a merge note does not."""
    if previous is None:
        return True
    return version.action in SERVING_ACTIONS or any(
        getattr(previous, f) != getattr(version, f) for f in RELEASED_FIELDS
    )


def releases_items_changed(*, changes: Sequence[tuple[MemoryItem, str | None]]) -> None:
    """After items changed (each with its status before the change, None for a
    new item): in every bank that publishes automatically, a change that
    touches the approved set (an item approved now or before) is published
    at once as the next release, which becomes production. Items neither
    approved before nor now cost no query."""
    by_bank: dict[int, set[int]] = defaultdict(set)
    banks: dict[int, Bank] = {}
    for item, before in changes:
        if item.status == ItemStatus.APPROVED or before == ItemStatus.APPROVED:
            by_bank[item.bank_id].add(item.pk)
            banks[item.bank_id] = item.bank
    for bank_id, item_ids in by_bank.items():
        mode = BankReleasing.objects.filter(bank_id=bank_id).values_list("mode", flat=True).first()
        if mode == PublishMode.MANUAL:
            continue
        with transaction.atomic():
            releasing = releasing_locked(bank=banks[bank_id])
            if releasing.mode != PublishMode.AUTOMATIC or releasing.evaluation_gate != EvaluationGate.OFF:
                continue
            release = release_write(releasing=releasing, source=ReleaseSource.AUTOMATIC, item_ids=item_ids)
            if release is not None:
                releasing.production = release
                releasing.save(update_fields=["production", "updated_at"])
                serving_sync(releasing)
