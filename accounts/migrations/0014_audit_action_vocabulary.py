# Audit actions get one vocabulary (accounts/audit/actions.py): the names written before it are renamed in place,
# so the audit page's action filter finds the whole history under one name each. An auto-approval used to write
# two events (the version's "memory_item.auto-approved" and a "memory_item.auto_approve" carrying the verdict tier
# as a number); the second is folded into the first, which is what an auto-approval writes now.
from django.db import migrations

RENAMED = {
    "bank.trust_policy_update": "bank.update_trust_policy",
    "bank.auto_approvals_undo": "bank.undo_auto_approvals",
    "release.published": "release.publish",
    "release.mode": "release.set_mode",
    "release.canary": "release.start_canary",
    "release.canary_stopped": "release.stop_canary",
    "release.canary_rolled_back_automatically": "release.auto_roll_back_canary",
    "release.promoted": "release.promote",
    "release.rolled_back": "release.roll_back",
    "release.auto_rollback": "release.set_auto_rollback",
    "memory_item.risks_confirm": "memory_item.confirm_risks",
    "memory_item.created": "memory_item.create",
    "memory_item.edited": "memory_item.edit",
    "memory_item.approved": "memory_item.approve",
    "memory_item.auto-approved": "memory_item.auto_approve",
    "memory_item.rejected": "memory_item.reject",
    "memory_item.archived": "memory_item.archive",
    "memory_item.archived-as-wrong": "memory_item.archive_as_wrong",
    "memory_item.superseded": "memory_item.supersede",
    "memory_item.merged": "memory_item.merge",
    "memory_item.merged-in": "memory_item.merge_in",
    "memory_item.kept-both": "memory_item.keep_both",
    "memory_item.flagged": "memory_item.flag",
    "memory_item.proposed": "memory_item.propose",
    "memory_item.reopened": "memory_item.reopen",
    "memory_item.reverted": "memory_item.revert",
    "memory_item.supported": "memory_item.add_support",
    "memory_item.repeated": "memory_item.add_repetition",
    "memory_item.proposed-for-retirement": "memory_item.propose_retirement",
    "memory_item.kept": "memory_item.keep",
    "memory_item.validity": "memory_item.set_validity",
    "memory_item.confirmed-current": "memory_item.confirm_current",
    "memory_item.stale": "memory_item.mark_stale",
}
# Tier 1 only ever auto-approved as the LLM judge (the agent's own report, tier 1 today, never auto-approves);
# 2 and 3 meant different tiers before memories 0025, so those events keep their note as it was.
JUDGE_NOTE = "Approved by the bank's trust policy (no risk finding, no twin, verdict of the judge met)."


def _fold_auto_approvals(AuditEvent):
    extra = AuditEvent.objects.filter(action="memory_item.auto_approve", after__has_key="policy").order_by("id")
    for event in extra.iterator():
        twin = (
            AuditEvent.objects.filter(
                team_id=event.team_id, object_id=event.object_id, action="memory_item.auto-approved", id__lt=event.id
            )
            .order_by("-id")
            .first()
        )
        if twin is None:
            continue  # nothing to fold it into: it stays, the only record of that approval
        if (event.after or {}).get("tier") == 1 and isinstance(twin.after, dict):
            twin.after = {**twin.after, "note": JUDGE_NOTE}
            twin.save(update_fields=["after"])
        event.delete()


def forwards(apps, schema_editor):
    AuditEvent = apps.get_model("accounts", "AuditEvent")
    _fold_auto_approvals(AuditEvent)
    for old, new in RENAMED.items():
        AuditEvent.objects.filter(action=old).update(action=new)


def backwards(apps, schema_editor):
    AuditEvent = apps.get_model("accounts", "AuditEvent")
    for old, new in RENAMED.items():
        AuditEvent.objects.filter(action=new).update(action=old)


class Migration(migrations.Migration):
    dependencies = [
        ("accounts", "0013_webhook_attempt_private_target"),
    ]

    operations = [migrations.RunPython(forwards, backwards, elidable=False)]
