from django.conf import settings
from django.http import JsonResponse

OTLP_PREFIX = "/api/v1/otel/"


class ApiBodyLimitMiddleware:
    """Answer an oversized agent-API request with a JSON 413 before anything
    reads the body (Django would otherwise raise deep inside the parser).
    The OTLP endpoint checks its own size: its errors are google.rpc.Status bodies."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        if request.path.startswith("/api/") and not request.path.startswith(OTLP_PREFIX):
            try:
                length = int(request.META.get("CONTENT_LENGTH") or 0)
            except ValueError:
                length = 0
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
