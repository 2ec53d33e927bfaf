import sys
import zoneinfo
from urllib.parse import unquote

from django.conf import settings
from django.db import InterfaceError, OperationalError
from django.http import HttpResponse, JsonResponse
from django.template.loader import render_to_string
from django.utils import timezone
from django.views.defaults import server_error

OTLP_PREFIX = "/api/v1/otel/"
RELEASE_IMPORT_PATH = "/api/v1/releases/import"  # limited by RB_RELEASE_IMPORT_MAX_BYTES instead


class ApiBodyLimitMiddleware:
    """Answer an oversized agent-API request with a JSON 413 before anything
    reads the body (Django would otherwise raise deep inside the parser).
    The OTLP endpoint checks its own size: its errors are google.rpc.Status bodies; the release import
    checks its own, larger limit (RB_RELEASE_IMPORT_MAX_BYTES) and names it."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        if request.path.startswith("/api/") and not request.path.startswith(OTLP_PREFIX):
            try:
                length = int(request.META.get("CONTENT_LENGTH") or 0)
            except ValueError:
                length = 0
            if request.path == RELEASE_IMPORT_PATH:  # its own limit; the endpoint answers its own 413
                return self.get_response(request)
            limit = settings.RB_API_MAX_BODY_BYTES
            if length > limit:
                return JsonResponse(
                    {
                        "detail": f"Request body is {length} bytes; the limit is {limit} bytes (RB_API_MAX_BODY_BYTES). "
                        "Send fewer trajectories per batch or trim long observations.",
                        "code": "payload_too_large",
                    },
                    status=413,
                )
        return self.get_response(request)


# What a request that cannot reach the database answers: 503 with this Retry-After (seconds), never 500.
DATABASE_ERRORS = (OperationalError, InterfaceError)
DATABASE_RETRY_AFTER = 5


def database_unavailable_response(request) -> HttpResponse:
    """The 503 for a database outage: JSON under /api/, a plain page (no database needed) elsewhere."""
    if request.path.startswith("/api/"):
        response = JsonResponse(
            {"detail": "The database is unavailable; retry shortly.", "code": "database_unavailable"}, status=503
        )
    else:
        response = HttpResponse(render_to_string("503.html", {"retry_after": DATABASE_RETRY_AFTER}), status=503)
    response["Retry-After"] = str(DATABASE_RETRY_AFTER)
    return response


class DatabaseUnavailableMiddleware:
    """A view that cannot reach the database (refused, dropped, restarting)
    answers 503 with Retry-After instead of a 500. The API maps the same
    errors in its own exception handlers (reasoningbank_site.api)."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        return self.get_response(request)

    def process_exception(self, request, exception):
        if isinstance(exception, DATABASE_ERRORS):
            return database_unavailable_response(request)
        return None


def handler500(request):
    """The same 503 for a database error raised outside a view (a middleware's session or user lookup)."""
    exception = sys.exc_info()[1]
    if isinstance(exception, DATABASE_ERRORS):
        return database_unavailable_response(request)
    return server_error(request)


# The cookie static/js/app.js sets to the browser's IANA time zone name (e.g. "Europe/Lisbon").
TIME_ZONE_COOKIE = "rb_tz"


class ReviewerTimeZoneMiddleware:
    """Pages show dates, and read the days a reviewer picks, in the reviewer's own time zone: the one their
    browser reports in the ``rb_tz`` cookie (Django's "selecting the current time zone" pattern). Without the
    cookie, or with a name that is no time zone, the site's ``TIME_ZONE``."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        zone = reviewer_time_zone(request.COOKIES.get(TIME_ZONE_COOKIE, ""))
        if zone is None:
            timezone.deactivate()
        else:
            timezone.activate(zone)
        try:
            return self.get_response(request)
        finally:
            timezone.deactivate()


def reviewer_time_zone(name: str) -> zoneinfo.ZoneInfo | None:
    """The time zone a cookie names, or None for an empty, unknown or malformed name."""
    name = unquote(name)
    if not name or len(name) > 64:
        return None
    try:
        return zoneinfo.ZoneInfo(name)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError, OSError):
        return None
