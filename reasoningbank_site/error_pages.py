"""The HTML error pages' handlers (templates 403.html, 404.html, 500.html on
error_base.html, which needs no context processor and no database), with the
API's JSON shape for anything under /api/ that ninja itself did not answer,
and the favicon's old address."""

from __future__ import annotations

from django.http import JsonResponse
from django.templatetags.static import static
from django.views.decorators.cache import cache_control
from django.views.defaults import page_not_found, permission_denied
from django.views.generic import RedirectView


def _is_api(request) -> bool:
    return request.path.startswith("/api/")


def handler404(request, exception=None):
    if _is_api(request):
        return JsonResponse({"detail": "Not found.", "code": "not_found"}, status=404)
    return page_not_found(request, exception)


def handler403(request, exception=None):
    if _is_api(request):
        return JsonResponse({"detail": "Forbidden.", "code": "forbidden"}, status=403)
    return permission_denied(request, exception)


# Browsers and crawlers ask for /favicon.ico whatever the page's <link rel=icon> says.
favicon = cache_control(max_age=86400, public=True)(RedirectView.as_view(url=static("favicon.svg"), permanent=True))
