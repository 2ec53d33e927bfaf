"""Domain errors: what a service raises when it refuses. Each carries a
sentence for the person who tried (``message``) and a machine ``code``.

Services know nothing of HTTP. The agent API maps each class to a status in
one table (``reasoningbank_site/api.py``: ``ERROR_STATUS``); the UI shows the
message as a form error or a toast. Subclass the nearest kind rather than
adding a status anywhere else."""

from __future__ import annotations


class DomainError(Exception):
    """Base of every refusal a service can state. ``retry_after`` (seconds)
    is set when trying again later can succeed; ``details`` are more fields
    of the API's error answer (JSON-ready), beside ``detail`` and ``code``."""

    code = "invalid"

    def __init__(
        self, message: str, *, code: str | None = None, retry_after: int | None = None, details: dict | None = None
    ):
        super().__init__(message)
        self.message = message
        if code:
            self.code = code
        self.retry_after = retry_after
        self.details = details or {}


class NotAuthenticated(DomainError):
    """No valid credentials (an unknown, revoked or expired token)."""

    code = "invalid_token"


class Forbidden(DomainError):
    """Valid credentials, but this caller may not do this."""

    code = "forbidden"


class NotFound(DomainError):
    """No such object for this caller (another bank's objects included: never leak existence)."""

    code = "not_found"


class Invalid(DomainError):
    """The input breaks a rule; the message names the field and the rule."""

    code = "validation_error"


class Undecodable(DomainError):
    """The request body cannot be read at all (corrupt gzip, not protobuf, not JSON)."""

    code = "undecodable_body"


class UnsupportedMediaType(DomainError):
    """The body is in an encoding or content type this endpoint does not speak."""

    code = "unsupported_media_type"


class TooLarge(DomainError):
    """The input exceeds a stated size limit; the message names the limit."""

    code = "payload_too_large"


class Conflict(DomainError):
    """The object changed or exists already in a way that forbids this action."""

    code = "conflict"


class RateLimited(DomainError):
    """Too many requests; ``retry_after`` says when to try again."""

    code = "rate_limited"


class Unavailable(DomainError):
    """A part the action needs (embedding model, database, broker) is not available now."""

    code = "unavailable"


class DuplicateApproval(Conflict):
    """Approving would serve a lesson the bank already serves: an approved item is
    at or above the bank's duplicate threshold. ``duplicates`` lists them (as
    ``memories.review.selectors.NearDuplicate``); the caller may approve anyway with
    ``confirm_duplicate=True``. A Conflict, so the API answers 409."""

    code = "duplicate_needs_confirmation"

    def __init__(self, message: str, *, duplicates=()):
        super().__init__(message)
        self.duplicates = list(duplicates)


class StaleVersion(Conflict):
    """A decision made on a version of an object that has changed since (another
    reviewer decided first). ``changes`` describes what happened since, newest first."""

    code = "stale_version"

    def __init__(self, message: str, *, changes: list | None = None, current_version: int | None = None):
        super().__init__(message)
        self.changes = changes or []
        self.current_version = current_version


class RisksNeedConfirmation(Conflict):
    """Approving would serve an item with risk findings nobody confirmed having
    read. ``findings`` lists them (``memories.trust.risk_models.RiskFinding``); the caller
    may approve anyway with ``confirm_risks=True``, which records who confirmed.
    A Conflict, so the API answers 409."""

    code = "risks_need_confirmation"

    def __init__(self, message: str, *, findings=(), details: dict | None = None):
        super().__init__(message, details=details)
        self.findings = list(findings)
