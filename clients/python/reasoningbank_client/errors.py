"""Typed errors. Every error the service answers carries its JSON
``{"detail": ..., "code": ...}``; the exception keeps both, the HTTP status,
and (for 422) the per-field ``errors`` list."""

from __future__ import annotations

from typing import Any


class RBError(Exception):
    """Base class of every error this client raises."""

    def __init__(self, detail: str, *, code: str = "", status: int | None = None, body: Any = None):
        super().__init__(f"{code}: {detail}" if code else detail)
        self.detail = detail
        self.code = code
        self.status = status
        self.body = body


class ConfigurationError(RBError):
    """The client is missing its URL or token (arguments or RB_URL / RB_TOKEN)."""


class ConnectionError(RBError):  # shadows the builtin on purpose: rb.ConnectionError
    """The service could not be reached (refused, DNS, timeout), after the retries."""


class APIError(RBError):
    """The service answered with an error status."""


class BadRequestError(APIError):
    """400: the body is not valid JSON."""


class AuthenticationError(APIError):
    """401: no token, or an unknown, revoked or expired one."""


class PermissionError(APIError):  # shadows the builtin on purpose: rb.PermissionError
    """403: the token lacks the scope, or the bank is archived."""


class NotFoundError(APIError):
    """404: no such object in this token's bank."""


class ConflictError(APIError):
    """409: a review decision the item's state refuses, a trajectory still in flight, or an
    ``external_id`` another token of the bank sent first (code ``external_id_taken``)."""


class PayloadTooLargeError(APIError):
    """413: the body, the steps or the batch is over the service's limit."""


class ValidationError(APIError):
    """422: the input is invalid; ``errors`` names each field and problem."""

    @property
    def errors(self) -> list[dict]:
        return list(self.body.get("errors") or []) if isinstance(self.body, dict) else []


class RateLimitError(APIError):
    """429: over the bank's per-token rate limit (after the retries)."""

    def __init__(self, detail: str, *, retry_after: float | None = None, **kwargs: Any):
        super().__init__(detail, **kwargs)
        self.retry_after = retry_after


class ServerError(APIError):
    """5xx: the service failed (after the retries); 503 when the embedding model cannot load."""


class WaitTimeoutError(RBError):
    """``wait()`` ran out of time; ``trajectory`` is the last state seen."""

    def __init__(self, detail: str, *, trajectory: Any = None):
        super().__init__(detail, code="wait_timeout")
        self.trajectory = trajectory


_BY_STATUS: dict[int, type[APIError]] = {
    400: BadRequestError,
    401: AuthenticationError,
    403: PermissionError,
    404: NotFoundError,
    409: ConflictError,
    413: PayloadTooLargeError,
    422: ValidationError,
    429: RateLimitError,
}


def error_for(status: int, body: Any, *, retry_after: float | None = None) -> APIError:
    """The typed exception for an HTTP error answer (``body`` parsed JSON, or text)."""
    if isinstance(body, dict):
        detail = str(body.get("detail") or f"HTTP {status}")
        code = str(body.get("code") or "")
    else:
        detail = (str(body or "").strip()[:500]) or f"HTTP {status}"
        code = ""
    if status == 429:
        return RateLimitError(detail, code=code, status=status, body=body, retry_after=retry_after)
    cls = _BY_STATUS.get(status) or (ServerError if status >= 500 else APIError)
    return cls(detail, code=code, status=status, body=body)
