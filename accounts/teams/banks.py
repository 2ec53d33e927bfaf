"""Banks: creating one, changing its settings (validated by the model's field
validators, audited field by field), archiving and bringing it back."""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone

from accounts.audit.actions import AuditAction
from accounts.audit.services import audit_record, snapshot
from accounts.errors import AccountsConflict, AccountsInvalid
from accounts.models import Bank, Team
from accounts.teams.services import unique_slug

# The settings a bank's admins change (the settings form shows exactly these).
BANK_SETTINGS = [
    "name",
    "description",
    "retrieval_mode",
    "top_k",
    "min_similarity",
    "duplicate_threshold",
    "trust_agent_outcome",
    "reward_threshold",
    "judge_model",
    "distill_model",
    "few_shot_enabled",
    "few_shot_max_chars",
    "holdout_fraction",
    "item_holdout_fraction",
    "utility_ranking",
    "rate_limit_per_minute",
    "ingest_quota_per_day",
    "step_retention_days",
]


def _check_known(keys) -> None:
    unknown = set(keys) - set(BANK_SETTINGS) - {"slug"}
    if unknown:
        raise AccountsInvalid(f"Unknown bank settings: {', '.join(sorted(unknown))}.")


def _full_clean(bank: Bank, *, fields) -> None:
    """Run the model's validators on ``fields`` of ``bank`` (converting the
    values in place); raises AccountsInvalid naming each bad field."""
    exclude = [f.name for f in Bank._meta.concrete_fields if f.name not in fields]
    try:
        bank.full_clean(exclude=exclude, validate_unique=False, validate_constraints=False)
    except ValidationError as exc:
        problems = []
        for name, messages in exc.message_dict.items():
            label = str(Bank._meta.get_field(name).verbose_name).capitalize()
            problems += [f"{label}: {message}" for message in messages]
        raise AccountsInvalid(" ".join(problems)) from None


@transaction.atomic
def bank_create(*, team: Team, name: str, slug: str = "", actor=None, **settings_) -> Bank:
    """Create a bank in ``team`` with optional settings (field names of Bank,
    see BANK_SETTINGS). An empty slug is derived from the name. Raises
    AccountsInvalid for unknown or invalid settings, AccountsConflict for a
    slug the team already uses."""
    _check_known(settings_)
    bank = Bank(team=team, name=name.strip(), **settings_)
    _full_clean(bank, fields=["name", *settings_])
    if slug:
        if Bank.objects.filter(team=team, slug=slug).exists():
            raise AccountsConflict(f"This team already has a bank '{slug}'.")
    else:
        slug = unique_slug(name, lambda s: Bank.objects.filter(team=team, slug=s).exists())
    bank.slug = slug
    bank.save()
    audit_record(
        action=AuditAction.BANK_CREATE,
        team=team,
        bank=bank,
        user=actor,
        obj=bank,
        after={"slug": slug, **snapshot(bank, BANK_SETTINGS)},
    )
    return bank


def _holdout_check(bank: Bank) -> None:
    """Refuse a holdout that with the running canary's share (copied on the locked bank row) adds up to
    more than 100 % of retrievals: the canary would get only what is left and its comparison starve.
    The canary's own check (memories.releases.labels.canary_fraction_check) is the other way round."""
    canary = bank.release_canary_fraction if bank.release_canary is not None else 0.0
    holdout = bank.holdout_fraction or 0.0
    if canary > 0 and holdout + canary > 1 + 1e-9:
        raise AccountsInvalid(
            f"Holdout fraction: a {holdout * 100:g} % holdout and the running canary's {canary * 100:g} % add up "
            f"to {(holdout + canary) * 100:g} %, over 100 %: the canary would get only {max(0.0, 1 - holdout) * 100:g} % "
            f"of retrievals. Lower the holdout to at most {(1 - canary) * 100:g} %, or stop or promote the canary "
            "first (Releases page)."
        )


@transaction.atomic
def bank_update_settings(*, bank: Bank, actor, **values) -> Bank:
    """Change some of a bank's settings (keys from BANK_SETTINGS) and audit
    exactly the fields that changed. Raises AccountsInvalid for unknown keys,
    values the model's validators refuse, and a holdout that with the running
    canary's share exceeds 100 % of retrievals."""
    _check_known(values)
    bank = Bank.objects.select_for_update().select_related("team").get(pk=bank.pk)
    before = snapshot(bank, list(values))
    for key, value in values.items():
        setattr(bank, key, value)
    _full_clean(bank, fields=values)
    changed = [key for key in values if getattr(bank, key) != before[key]]
    if not changed:
        return bank
    if "holdout_fraction" in changed:
        _holdout_check(bank)
    bank.save(update_fields=[*changed, "updated_at"])
    audit_record(
        action=AuditAction.BANK_UPDATE_SETTINGS,
        bank=bank,
        user=actor,
        obj=bank,
        before={key: before[key] for key in changed},
        after=snapshot(bank, changed),
    )
    return bank


@transaction.atomic
def bank_archive(*, bank: Bank, actor) -> Bank:
    """Archive a bank: its tokens then get 403 ``bank_archived`` — it serves
    nothing and accepts nothing. Idempotent."""
    bank = Bank.objects.select_for_update().select_related("team").get(pk=bank.pk)
    if bank.archived_at is None:
        bank.archived_at = timezone.now()
        bank.save(update_fields=["archived_at", "updated_at"])
        audit_record(
            action=AuditAction.BANK_ARCHIVE,
            bank=bank,
            user=actor,
            obj=bank,
            before={"archived_at": None},
            after={"archived_at": bank.archived_at},
        )
    return bank


@transaction.atomic
def bank_unarchive(*, bank: Bank, actor) -> Bank:
    """Bring an archived bank back into service. Idempotent."""
    bank = Bank.objects.select_for_update().select_related("team").get(pk=bank.pk)
    if bank.archived_at is not None:
        before = {"archived_at": bank.archived_at}
        bank.archived_at = None
        bank.save(update_fields=["archived_at", "updated_at"])
        audit_record(
            action=AuditAction.BANK_UNARCHIVE,
            bank=bank,
            user=actor,
            obj=bank,
            before=before,
            after={"archived_at": None},
        )
    return bank
