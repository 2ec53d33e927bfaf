"""A bank's learning policy: created on first change, every change audited."""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.db import transaction

from accounts.audit.actions import AuditAction
from accounts.audit.services import audit_record
from accounts.models import Bank
from memories.learning.models import BankLearning
from reasoningbank_site.errors import Invalid

BANK_LEARNING_SETTINGS = (
    "repeat_threshold",
    "rejected_examples",
    "valid_days",
    "environment_keys",
    "suspend_when_hurting",
    "utility_weight",
    "utility_prior",
)


@transaction.atomic
def bank_learning_update(*, bank: Bank, actor, **values) -> BankLearning:
    """Change some of ``bank``'s learning settings (keys of
    BANK_LEARNING_SETTINGS), creating its policy row on first use, and audit
    exactly what changed (``bank.update_learning``). Environment keys are
    stripped, deduplicated and kept in order. Raises Invalid for an unknown
    key or a value the model's validators refuse (nothing changed)."""
    unknown = sorted(set(values) - set(BANK_LEARNING_SETTINGS))
    if unknown:
        raise Invalid(f"Unknown learning settings: {', '.join(unknown)}.")
    if "environment_keys" in values:
        keys = values["environment_keys"]
        if isinstance(keys, str):
            keys = keys.replace(",", " ").split()
        values["environment_keys"] = list(dict.fromkeys(str(k).strip() for k in keys or () if str(k).strip()))
    learning, _ = BankLearning.objects.select_for_update().get_or_create(bank=bank)
    before = {key: getattr(learning, key) for key in values}
    for key, value in values.items():
        setattr(learning, key, value)
    try:
        learning.full_clean(exclude=[f.name for f in BankLearning._meta.fields if f.name not in values])
    except ValidationError as exc:
        messages = "; ".join(f"{field}: {' '.join(errors)}" for field, errors in exc.message_dict.items())
        raise Invalid(messages) from None
    changed = [key for key in values if getattr(learning, key) != before[key]]
    if changed:
        learning.save(update_fields=[*changed, "updated_at"])
        audit_record(
            action=AuditAction.BANK_UPDATE_LEARNING,
            bank=bank,
            user=actor,
            obj=bank,
            before={key: before[key] for key in changed},
            after={key: getattr(learning, key) for key in changed},
        )
    return learning
