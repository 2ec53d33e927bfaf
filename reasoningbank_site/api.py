"""The one NinjaAPI: versioned agent API under /api/v1/. Every error leaves
here as JSON ``{"detail": message, "code": machine_code}`` (422s add
``errors``), mapped once below."""

import logging

from django.db import InterfaceError, OperationalError
from django.http import Http404
from ninja import NinjaAPI
from ninja.errors import AuthenticationError, HttpError, ValidationError

from reasoningbank_site.errors import (
    Conflict,
    DomainError,
    Forbidden,
    Invalid,
    NotAuthenticated,
    NotFound,
    RateLimited,
    TooLarge,
    Unavailable,
    Undecodable,
    UnsupportedMediaType,
)
from reasoningbank_site.middleware import DATABASE_RETRY_AFTER
from trajectories.otlp.wire import is_otlp_request, status_response

api = NinjaAPI(
    title="ReasoningBank agent API",
    version="1",
    description=(
        "Agents retrieve approved memories before a task and send their trajectories after it. "
        "Authenticate with `Authorization: Bearer rb_…`; the token implies the bank."
    ),
    docs_url="/docs",
    urls_namespace="api-v1",
)


def _error(request, status: int, message: str, code: str, **extra):
    if is_otlp_request(request):
        # OTLP/HTTP clients read errors as a google.rpc.Status in the request's encoding.
        return status_response(request, status, message, code)
    response = api.create_response(request, {"detail": message, "code": code, **extra}, status=status)
    return response


# The one place a domain error becomes an HTTP status (most specific class first).
ERROR_STATUS: dict[type[DomainError], int] = {
    NotAuthenticated: 401,
    Forbidden: 403,
    NotFound: 404,
    Conflict: 409,
    TooLarge: 413,
    UnsupportedMediaType: 415,
    Undecodable: 400,
    Invalid: 422,
    RateLimited: 429,
    Unavailable: 503,
}


def status_for(exc: DomainError) -> int:
    return next((status for cls, status in ERROR_STATUS.items() if isinstance(exc, cls)), 400)


@api.exception_handler(DomainError)
def on_domain_error(request, exc: DomainError):
    response = _error(request, status_for(exc), exc.message, exc.code, **exc.details)
    if exc.retry_after is not None:
        response["Retry-After"] = str(exc.retry_after)
    return response


@api.exception_handler(AuthenticationError)
def on_auth_error(request, exc):
    return _error(request, 401, "Send an API token as 'Authorization: Bearer rb_…'.", "missing_token")


def _describe(error: dict) -> str:
    loc = ".".join(str(p) for p in error.get("loc", ()) if p not in ("body", "payload"))
    return f"{loc}: {error.get('msg', 'invalid')}" if loc else error.get("msg", "invalid")


@api.exception_handler(ValidationError)
def on_validation_error(request, exc: ValidationError):
    errors = [
        {"loc": [str(p) for p in e.get("loc", ())], "msg": e.get("msg", ""), "type": e.get("type", "")}
        for e in exc.errors
    ]
    message = "; ".join(_describe(e) for e in exc.errors[:5]) or "Invalid request."
    return _error(request, 422, message, "validation_error", errors=errors)


@api.exception_handler(HttpError)
def on_http_error(request, exc: HttpError):
    # ninja wraps any body-parser failure as HttpError(400) "from" the cause: name it.
    cause = exc.__cause__
    if exc.status_code == 400 and isinstance(cause, RecursionError):
        return _error(request, 400, "The request body is not valid JSON: it is nested too deeply.", "invalid_json")
    if exc.status_code == 400 and isinstance(cause, ValueError):  # JSONDecodeError, UnicodeDecodeError
        return _error(request, 400, f"The request body is not valid JSON ({cause}).", "invalid_json")
    return _error(request, exc.status_code, str(exc), "http_error")


@api.exception_handler(Http404)
def on_not_found(request, exc):
    return _error(request, 404, "Not found.", "not_found")


@api.exception_handler(OperationalError)
@api.exception_handler(InterfaceError)
def on_database_unavailable(request, exc):
    # An outage (refused, dropped, restarting) is temporary: agents retry after Retry-After.
    logging.getLogger("reasoningbank.api").warning("database unavailable on %s: %s", request.path, exc)
    response = _error(request, 503, "The database is unavailable; retry shortly.", "database_unavailable")
    response["Retry-After"] = str(DATABASE_RETRY_AFTER)
    return response


@api.exception_handler(Exception)
def on_unexpected(request, exc):
    # A bug, never an input problem: log it whole, answer JSON all the same.
    logging.getLogger("reasoningbank.api").exception("unhandled error on %s", request.path)
    return _error(request, 500, "Internal error; it has been logged.", "internal_error")


from accounts.tokens.api import router as accounts_router  # noqa: E402
from memories.releases.api import router as releases_router  # noqa: E402
from memories.review.api import router as review_router  # noqa: E402
from memories.serving.api import router as memories_router  # noqa: E402
from trajectories.evaluation.api import router as evaluation_router  # noqa: E402
from trajectories.evaluation.api_tasksets import router as task_sets_router  # noqa: E402
from trajectories.exports.api import router as export_router  # noqa: E402
from trajectories.ingest.api import router as trajectories_router  # noqa: E402

api.add_router("/", accounts_router)
api.add_router("/", memories_router)
api.add_router("/", review_router)
api.add_router("/", releases_router)
api.add_router("/", trajectories_router)
api.add_router("/", export_router)
api.add_router("/", evaluation_router)
api.add_router("/", task_sets_router)
