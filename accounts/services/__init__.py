"""Writes of the accounts app, one module per sub-domain. ``audit`` owns the
audit log (``audit_record``, which other apps' services call too); ``teams``
owns teams and memberships; ``invitations`` owns invitation links; ``banks``
owns banks and their settings; ``tokens`` owns API tokens and the secret hash;
``usage`` owns the per-minute request counter (raw SQL upsert) and its
compaction; ``errors`` owns the refusals (domain errors that are also
``AccountsError``, which the account pages catch)."""

from accounts.services.audit import audit_record, snapshot
from accounts.services.banks import BANK_SETTINGS, bank_archive, bank_create, bank_unarchive, bank_update_settings
from accounts.services.errors import (
    AccountsConflict,
    AccountsError,
    AccountsForbidden,
    AccountsInvalid,
    InvitationError,
)
from accounts.services.invitations import (
    IssuedInvitation,
    invitation_accept,
    invitation_check,
    invitation_check_email,
    invitation_create,
    invitation_revoke,
    invitation_ttl,
)
from accounts.services.teams import membership_change_role, membership_remove, team_create
from accounts.services.tokens import (
    LAST_USED_RESOLUTION_SECONDS,
    TOKEN_PREFIX,
    IssuedToken,
    api_token_create,
    api_token_revoke,
    api_token_touch,
    hash_token,
)
from accounts.services.usage import (
    RATE_WINDOW_SECONDS,
    USAGE_MINUTE_RETENTION_HOURS,
    RateDecision,
    api_token_hit,
    token_usage_compact,
)

__all__ = [
    "BANK_SETTINGS",
    "LAST_USED_RESOLUTION_SECONDS",
    "RATE_WINDOW_SECONDS",
    "TOKEN_PREFIX",
    "USAGE_MINUTE_RETENTION_HOURS",
    "AccountsConflict",
    "AccountsError",
    "AccountsForbidden",
    "AccountsInvalid",
    "InvitationError",
    "IssuedInvitation",
    "IssuedToken",
    "RateDecision",
    "api_token_create",
    "api_token_hit",
    "api_token_revoke",
    "api_token_touch",
    "audit_record",
    "bank_archive",
    "bank_create",
    "bank_unarchive",
    "bank_update_settings",
    "hash_token",
    "invitation_accept",
    "invitation_check",
    "invitation_check_email",
    "invitation_create",
    "invitation_revoke",
    "invitation_ttl",
    "membership_change_role",
    "membership_remove",
    "snapshot",
    "team_create",
    "token_usage_compact",
]
