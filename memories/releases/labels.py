"""Which release agents are served: production, and an optional canary with
its traffic share. Every move is audited; a move to where a label already
points is a no-op, never an error."""

from __future__ import annotations

from django.db import transaction
from django.utils import timezone

from accounts.audit.actions import AuditAction
from accounts.audit.services import audit_record
from accounts.models import Bank
from accounts.webhooks.events import bank_webhook_data
from accounts.webhooks.subscriptions import webhook_events_emit
from memories.releases.gate import release_gate_check
from memories.releases.models import CANARY_FRACTION_MAX, BankReleasing, PublishMode, Release
from memories.releases.selectors import release_get
from reasoningbank_site.errors import Conflict, Invalid


def releasing_locked(*, bank: Bank) -> BankReleasing:
    """``bank``'s BankReleasing row, created on first use, locked (the caller
    holds a transaction): publishes and label moves of one bank queue here.
    Its ``bank`` is ``bank`` itself, so serving_sync updates the caller's copy too."""
    BankReleasing.objects.get_or_create(bank_id=bank.pk)
    releasing = (
        BankReleasing.objects.select_for_update(of=("self",))
        .select_related("production", "canary")
        .get(bank_id=bank.pk)
    )
    releasing.bank = bank
    return releasing


def serving_sync(releasing: BankReleasing) -> None:
    """Copy ``releasing``'s labels onto its bank's row (and the bank instance),
    where retrieval reads them: call after every change of the labels, the
    mode or the newest release, in the same transaction. Marks the labelled
    releases served (``first_served_at``) the first time they are."""
    production = releasing.production if releasing.production_id else None
    values = {
        "release_production": production.number if production else None,
        "release_canary": releasing.canary.number if releasing.canary_id else None,
        "release_canary_fraction": releasing.canary_fraction if releasing.canary_id else 0.0,
        "release_filtered": production is not None
        and not (releasing.mode == PublishMode.AUTOMATIC and production.number == releasing.latest),
    }
    Bank.objects.filter(pk=releasing.bank.pk).update(**values)
    for name, value in values.items():
        setattr(releasing.bank, name, value)
    labelled = [pk for pk in (releasing.production_id, releasing.canary_id) if pk]
    if labelled:  # served from now on: a later rollback to it is never held by the evaluation gate
        Release.objects.filter(pk__in=labelled, first_served_at__isnull=True).update(first_served_at=timezone.now())


def canary_fraction_check(*, bank: Bank, fraction) -> float:
    """The canary share ``fraction`` (0–0.99 of all retrievals) if the arms
    still add up with the bank's holdout; raises Invalid otherwise. Inside a
    transaction: the holdout is read with the bank's row locked, so a holdout
    saved at the same moment (bank_update_settings, which checks the other
    way round) cannot make the arms add up to more than 100 %."""
    try:
        fraction = float(fraction)
    except (TypeError, ValueError):
        raise Invalid("canary_fraction: a number between 0.01 and 0.99 (a share of all retrievals).") from None
    if not 0 < fraction <= CANARY_FRACTION_MAX:
        raise Invalid(f"canary_fraction: between 0.01 and {CANARY_FRACTION_MAX} of all retrievals (got {fraction:g}).")
    holdout = Bank.objects.select_for_update().filter(pk=bank.pk).values_list("holdout_fraction", flat=True).first()
    holdout = holdout or 0
    if fraction + holdout > 1 + 1e-9:
        raise Invalid(
            f"canary_fraction: a {fraction * 100:g} % canary and the bank's {holdout * 100:g} % holdout add up to "
            f"{(fraction + holdout) * 100:g} %, over 100 %. Lower the canary to at most {(1 - holdout) * 100:g} %."
        )
    return fraction


def _manual(releasing: BankReleasing) -> bool:
    """Switch ``releasing`` to publishing by hand; True when it was automatic
    (the next change would otherwise publish over a label moved by hand)."""
    if releasing.mode == PublishMode.MANUAL:
        return False
    releasing.mode = PublishMode.MANUAL
    return True


def _labels(releasing: BankReleasing) -> dict:
    return {
        "mode": releasing.mode,
        "production": releasing.production.number if releasing.production_id else None,
        "canary": releasing.canary.number if releasing.canary_id else None,
        "canary_fraction": releasing.canary_fraction,
    }


def _save(releasing: BankReleasing, *, action: str, before: dict, actor=None, token=None, note: str = "") -> None:
    releasing.save()
    serving_sync(releasing)
    after = _labels(releasing)
    if note:
        after["note"] = note
    audit_record(
        action=action, bank=releasing.bank, user=actor, token=token, obj=releasing.bank, before=before, after=after
    )


def canary_start(*, releasing: BankReleasing, release: Release, fraction, actor=None, token=None) -> None:
    """Serve ``release`` to ``fraction`` of retrievals (checked) from now on; audited."""
    fraction = canary_fraction_check(bank=releasing.bank, fraction=fraction)
    if releasing.production_id == release.pk:
        raise Conflict(f"Release {release.number} is production already; a canary is another release.")
    before = _labels(releasing)
    _manual(releasing)
    if releasing.canary_id != release.pk:
        releasing.canary_started_at = timezone.now()
    releasing.canary, releasing.canary_fraction = release, fraction
    _save(releasing, action=AuditAction.RELEASE_START_CANARY, before=before, actor=actor, token=token)


@transaction.atomic
def release_canary_set(
    *, bank: Bank, number: int, fraction, actor=None, token=None, override: bool = False, override_reason: str = ""
) -> str:
    """Serve release ``number`` of ``bank`` as the canary to ``fraction`` of
    all retrievals (holdout, production and canary shares add up to 1); the
    bank then publishes by hand, so the comparison holds still. Changing the
    share of the running canary keeps its start. Under an evaluation gate a
    release never served before needs a passing evaluation (or an owner's
    override). Raises NotFound; Invalid for a share that with the holdout
    exceeds 100 %; Conflict for the production release, and what
    release_gate_check raises."""
    releasing = releasing_locked(bank=bank)
    release = release_get(bank=bank, number=number)
    if release.first_served_at is None:
        release_gate_check(
            releasing=releasing,
            release=release,
            override=override,
            reason=override_reason,
            doing="made the canary",
            actor=actor,
            token=token,
        )
    canary_start(releasing=releasing, release=release, fraction=fraction, actor=actor, token=token)
    return f"Release {number} is the canary for {releasing.canary_fraction * 100:g} % of retrievals."


@transaction.atomic
def release_canary_stop(*, bank: Bank, actor=None, token=None, note: str = "", automatic: bool = False) -> str | None:
    """Stop serving the canary (production is served in its place), audited;
    with ``automatic`` (the canary was significantly worse) the bank's
    dashboard announces it with ``note``. None when there is no canary (no-op)."""
    releasing = releasing_locked(bank=bank)
    if not releasing.canary_id:
        return None
    before = _labels(releasing)
    number = releasing.canary.number
    releasing.canary, releasing.canary_fraction, releasing.canary_started_at = None, 0, None
    if automatic:
        releasing.rollback_notice, releasing.rollback_notice_at = note, timezone.now()
    action = AuditAction.RELEASE_AUTO_ROLL_BACK_CANARY if automatic else AuditAction.RELEASE_STOP_CANARY
    _save(releasing, action=action, before=before, actor=actor, token=token, note=note)
    if automatic:  # nobody pressed a button: tell the bank's receivers (sent once this commits)
        data = {
            "bank": bank_webhook_data(bank),
            "release": {
                "canary": number,
                "production": releasing.production.number if releasing.production_id else None,
            },
            "note": note,
        }
        webhook_events_emit(bank_id=bank.pk, event="release.canary_rolled_back", payloads=[data])
    return f"Canary release {number} rolled back: production is served to all retrievals."


@transaction.atomic
def release_promote(
    *, bank: Bank, actor=None, token=None, override: bool = False, override_reason: str = ""
) -> str | None:
    """The canary becomes production (served to every retrieval not held out);
    audited. Under an evaluation gate the canary needs a passing evaluation
    (or an owner's override), whatever it did as the canary. None when there
    is no canary (a no-op). Raises what release_gate_check raises."""
    releasing = releasing_locked(bank=bank)
    if not releasing.canary_id:
        return None
    release_gate_check(
        releasing=releasing,
        release=releasing.canary,
        override=override,
        reason=override_reason,
        doing="promoted to production",
        actor=actor,
        token=token,
    )
    before = _labels(releasing)
    releasing.production = releasing.canary
    releasing.canary, releasing.canary_fraction, releasing.canary_started_at = None, 0, None
    _save(releasing, action=AuditAction.RELEASE_PROMOTE, before=before, actor=actor, token=token)
    return f"Release {releasing.production.number} is now production."


@transaction.atomic
def release_rollback(
    *, bank: Bank, number: int, actor=None, token=None, override: bool = False, override_reason: str = ""
) -> tuple[str, bool]:
    """Release ``number`` becomes production at once (any canary stops); items
    are never deleted, only what is served changes. A bank that published
    automatically now publishes by hand (else its next change would publish
    over the rollback). Audited. Returns (message, noop): rolling back to the
    production release stops the canary, and without one is a no-op. A
    release served before is never held by the evaluation gate (going back is
    safe); one never served is a publish in disguise and needs a passing
    evaluation (or an owner's override). Raises NotFound for an unknown
    number, and what release_gate_check raises."""
    releasing = releasing_locked(bank=bank)
    release = release_get(bank=bank, number=number)
    if releasing.production_id == release.pk and not releasing.canary_id:
        return f"Release {number} is production already: nothing to roll back.", True
    if release.first_served_at is None:
        release_gate_check(
            releasing=releasing,
            release=release,
            override=override,
            reason=override_reason,
            doing="made production",
            actor=actor,
            token=token,
        )
    before = _labels(releasing)
    switched = _manual(releasing)
    releasing.production = release
    releasing.canary, releasing.canary_fraction, releasing.canary_started_at = None, 0, None
    _save(releasing, action=AuditAction.RELEASE_ROLL_BACK, before=before, actor=actor, token=token)
    more = " The bank now publishes by hand, so the next change does not undo it." if switched else ""
    return f"Release {number} is production.{more}", False


@transaction.atomic
def release_policy_set(*, bank: Bank, auto_rollback: bool, actor=None, token=None) -> str:
    """Opt ``bank`` in or out of automatic canary rollback; audited."""
    releasing = releasing_locked(bank=bank)
    if releasing.auto_rollback == bool(auto_rollback):
        return "No change."
    releasing.auto_rollback = bool(auto_rollback)
    releasing.save(update_fields=["auto_rollback", "updated_at"])
    audit_record(
        action=AuditAction.RELEASE_SET_AUTO_ROLLBACK,
        bank=bank,
        user=actor,
        token=token,
        obj=bank,
        before={"auto_rollback": not releasing.auto_rollback},
        after={"auto_rollback": releasing.auto_rollback},
    )
    on = "rolled back on its own" if releasing.auto_rollback else "left for a reviewer"
    return f"A canary significantly worse than production is now {on}."


@transaction.atomic
def release_notice_dismiss(*, bank: Bank) -> None:
    BankReleasing.objects.filter(bank_id=bank.pk).update(rollback_notice="", rollback_notice_at=None)
