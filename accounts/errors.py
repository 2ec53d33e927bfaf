"""The refusals of the accounts services. Each is a domain error of the kind
that fits the rule (who may act, what was given, the state things are in) and
an ``AccountsError``, which the account pages catch to show the message."""

from __future__ import annotations

from reasoningbank_site.errors import Conflict, DomainError, Forbidden, Invalid


class AccountsError(DomainError):
    """A rule of teams, banks or tokens was broken; the message is meant for
    the person who tried (the UI shows it as is). Raised as one of the
    subclasses below."""


class AccountsForbidden(AccountsError, Forbidden):
    """The actor's role does not allow this (e.g. only owners make owners)."""


class AccountsInvalid(AccountsError, Invalid):
    """A given value breaks a rule (empty name, unknown role, out-of-range setting)."""


class AccountsConflict(AccountsError, Conflict):
    """The current state forbids it (a slug taken, the last owner leaving)."""


class InvitationError(AccountsError, Invalid):
    """The invitation link cannot be used. ``reason`` is one of unknown,
    expired, used, revoked, wrong_email (also the error's code, prefixed ``invitation_``)."""

    def __init__(self, message: str, reason: str):
        super().__init__(message, code=f"invitation_{reason}")
        self.reason = reason
