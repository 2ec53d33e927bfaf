"""The one vocabulary of audit actions: every ``audit_record`` names its
action with a member of ``AuditAction`` (``audit_event`` refuses any other
name), and the audit page shows its label.

The naming rule: ``<object>.<verb>``, both in snake_case, the verb in its
base form (``release.publish``, not ``release.published``), optionally
followed by what it acts on (``bank.update_trust_policy``). The label says
what happened, for people. docs/review-ui.md lists them all."""

from __future__ import annotations

from django.db import models


class AuditAction(models.TextChoices):
    TEAM_CREATE = "team.create", "Team created"
    MEMBERSHIP_ADD = "membership.add", "Member added"
    MEMBERSHIP_CHANGE_ROLE = "membership.change_role", "Member's role changed"
    MEMBERSHIP_REMOVE = "membership.remove", "Member removed"
    MEMBERSHIP_LEAVE = "membership.leave", "Member left the team"
    INVITATION_CREATE = "invitation.create", "Invitation created"
    INVITATION_ACCEPT = "invitation.accept", "Invitation accepted"
    INVITATION_REVOKE = "invitation.revoke", "Invitation withdrawn"
    BANK_CREATE = "bank.create", "Bank created"
    BANK_UPDATE_SETTINGS = "bank.update_settings", "Bank settings changed"
    BANK_ARCHIVE = "bank.archive", "Bank archived"
    BANK_UNARCHIVE = "bank.unarchive", "Bank restored from the archive"
    BANK_UPDATE_TRUST_POLICY = "bank.update_trust_policy", "Trust policy changed"
    BANK_UPDATE_LEARNING = "bank.update_learning", "Learning settings changed"
    BANK_UNDO_AUTO_APPROVALS = "bank.undo_auto_approvals", "Auto-approvals undone"
    AUTO_APPROVAL_AUDIT = "auto_approval.audit", "Auto-approval audited"
    TOKEN_CREATE = "token.create", "API token created"
    TOKEN_REVOKE = "token.revoke", "API token revoked"
    WEBHOOK_CREATE = "webhook.create", "Webhook added"
    WEBHOOK_DELETE = "webhook.delete", "Webhook removed"
    WEBHOOK_ENABLE = "webhook.enable", "Webhook enabled"
    WEBHOOK_DISABLE = "webhook.disable", "Webhook disabled after failed deliveries"
    WEBHOOK_REDELIVER = "webhook.redeliver", "Webhook delivery sent again"
    REVIEW_POLICY_UPDATE = "review_policy.update", "Review policy changed"
    REVIEW_ASSIGNMENT_CREATE = "review_assignment.create", "Review assigned"
    REVIEW_ASSIGNMENT_DELETE = "review_assignment.delete", "Review assignment removed"
    REVIEW_SEAT_RELEASE = "review_seat.release", "Review seat released"
    RELEASE_PUBLISH = "release.publish", "Release published"
    RELEASE_SET_MODE = "release.set_mode", "Release mode changed"
    RELEASE_START_CANARY = "release.start_canary", "Canary started"
    RELEASE_STOP_CANARY = "release.stop_canary", "Canary stopped"
    RELEASE_AUTO_ROLL_BACK_CANARY = "release.auto_roll_back_canary", "Canary rolled back automatically"
    RELEASE_PROMOTE = "release.promote", "Release promoted to production"
    RELEASE_ROLL_BACK = "release.roll_back", "Production rolled back"
    RELEASE_SET_AUTO_ROLLBACK = "release.set_auto_rollback", "Automatic canary rollback switched"
    RELEASE_SET_EVALUATION_GATE = "release.set_evaluation_gate", "Evaluation gate changed"
    RELEASE_OVERRIDE_GATE = "release.override_gate", "Evaluation gate overridden by an owner"
    MEMORY_ITEM_CREATE = "memory_item.create", "Memory item created"
    MEMORY_ITEM_EDIT = "memory_item.edit", "Memory item edited"
    MEMORY_ITEM_APPROVE = "memory_item.approve", "Memory item approved"
    MEMORY_ITEM_AUTO_APPROVE = "memory_item.auto_approve", "Memory item approved by the trust policy"
    MEMORY_ITEM_REJECT = "memory_item.reject", "Memory item rejected"
    MEMORY_ITEM_ARCHIVE = "memory_item.archive", "Memory item archived"
    MEMORY_ITEM_ARCHIVE_AS_WRONG = "memory_item.archive_as_wrong", "Memory item archived as wrong"
    MEMORY_ITEM_SUPERSEDE = "memory_item.supersede", "Memory item superseded"
    MEMORY_ITEM_MERGE = "memory_item.merge", "Memory item merged into another"
    MEMORY_ITEM_MERGE_IN = "memory_item.merge_in", "Another memory item merged into this one"
    MEMORY_ITEM_KEEP_BOTH = "memory_item.keep_both", "Memory item kept: not a duplicate"
    MEMORY_ITEM_FLAG = "memory_item.flag", "Memory item flagged for review"
    MEMORY_ITEM_PROPOSE = "memory_item.propose", "Memory item sent back to review"
    MEMORY_ITEM_REOPEN = "memory_item.reopen", "Memory item reopened for review"
    MEMORY_ITEM_REVERT = "memory_item.revert", "Decision on a memory item reverted"
    MEMORY_ITEM_ADD_SUPPORT = "memory_item.add_support", "Memory item supported by another run"
    MEMORY_ITEM_ADD_REPETITION = "memory_item.add_repetition", "Refused memory item distilled again"
    MEMORY_ITEM_PROPOSE_RETIREMENT = "memory_item.propose_retirement", "Memory item proposed for retirement"
    MEMORY_ITEM_KEEP = "memory_item.keep", "Memory item kept in service"
    MEMORY_ITEM_SET_VALIDITY = "memory_item.set_validity", "Memory item's validity set"
    MEMORY_ITEM_CONFIRM_CURRENT = "memory_item.confirm_current", "Memory item confirmed still current"
    MEMORY_ITEM_MARK_STALE = "memory_item.mark_stale", "Memory item marked stale"
    MEMORY_ITEM_SUSPEND = "memory_item.suspend", "Memory item suspended from serving"
    MEMORY_ITEM_UNSUSPEND = "memory_item.unsuspend", "Memory item served again"
    MEMORY_ITEM_CONFIRM_RISKS = "memory_item.confirm_risks", "Risk findings confirmed"
    TRAJECTORY_RELABEL = "trajectory.relabel", "Trajectory's verdict changed"
    TRAJECTORY_RETRY = "trajectory.retry", "Trajectory's processing retried"
    TRAJECTORY_DELETE = "trajectory.delete", "Trajectory deleted"
    TRAJECTORY_PURGE_STEPS = "trajectory.purge_steps", "Old trajectory steps purged"
    TRAJECTORY_PURGE_STEPS_FAIL = "trajectory.purge_steps_fail", "Old trajectory steps kept: archive failed"
    PROMPT_SAVE = "prompt.save", "Prompt saved"
    PROMPT_ACTIVATE = "prompt.activate", "Prompt activated"
    PROMPT_RESTORE_DEFAULT = "prompt.restore_default", "Default prompt restored"
    EXPERIMENT_START = "experiment.start", "Judge experiment started"
    EXPERIMENT_PROMOTE = "experiment.promote", "Judge experiment promoted"
    EVALUATION_CREATE = "evaluation.create", "Evaluation run created"
    EVALUATION_CANCEL = "evaluation.cancel", "Evaluation run cancelled"
    COMMENT_CREATE = "comment.create", "Comment added"
    COMMENT_DELETE = "comment.delete", "Comment deleted"


# A memory item's history names its versions in its own words (memories.items.models.MemoryItemVersion.action);
# each version is audited under the action here.
ITEM_VERSION_ACTIONS: dict[str, AuditAction] = {
    "created": AuditAction.MEMORY_ITEM_CREATE,
    "edited": AuditAction.MEMORY_ITEM_EDIT,
    "approved": AuditAction.MEMORY_ITEM_APPROVE,
    "auto-approved": AuditAction.MEMORY_ITEM_AUTO_APPROVE,
    "rejected": AuditAction.MEMORY_ITEM_REJECT,
    "archived": AuditAction.MEMORY_ITEM_ARCHIVE,
    "archived-as-wrong": AuditAction.MEMORY_ITEM_ARCHIVE_AS_WRONG,
    "superseded": AuditAction.MEMORY_ITEM_SUPERSEDE,
    "merged": AuditAction.MEMORY_ITEM_MERGE,
    "merged-in": AuditAction.MEMORY_ITEM_MERGE_IN,
    "kept-both": AuditAction.MEMORY_ITEM_KEEP_BOTH,
    "flagged": AuditAction.MEMORY_ITEM_FLAG,
    "proposed": AuditAction.MEMORY_ITEM_PROPOSE,
    "reopened": AuditAction.MEMORY_ITEM_REOPEN,
    "reverted": AuditAction.MEMORY_ITEM_REVERT,
    "supported": AuditAction.MEMORY_ITEM_ADD_SUPPORT,
    "repeated": AuditAction.MEMORY_ITEM_ADD_REPETITION,
    "proposed-for-retirement": AuditAction.MEMORY_ITEM_PROPOSE_RETIREMENT,
    "kept": AuditAction.MEMORY_ITEM_KEEP,
    "validity": AuditAction.MEMORY_ITEM_SET_VALIDITY,
    "confirmed-current": AuditAction.MEMORY_ITEM_CONFIRM_CURRENT,
    "stale": AuditAction.MEMORY_ITEM_MARK_STALE,
}


def item_version_audit_action(version_action: str) -> AuditAction:
    """The audit action of a memory item's version named ``version_action``.
    Raises KeyError for a version action without one (a programming error)."""
    return ITEM_VERSION_ACTIONS[version_action]


def audit_action_label(action: str) -> str:
    """What ``action`` means, for people (the name itself when it is not in the registry)."""
    try:
        return AuditAction(action).label
    except ValueError:
        return action
