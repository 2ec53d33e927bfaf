"""Hardening that every front door shares.

- ``safe_next_url``: the one reader of ``?next=`` / ``next`` (local paths only).
- ``ApiJsonErrorsMiddleware``: under /api/ an unknown path or a wrong method
  answers JSON (404 / 405 with ``Allow``) like every other API error.
- ``SecurityHeadersMiddleware``: ``Permissions-Policy`` on every response
  (CSP itself comes from django-csp, configured in settings).
- ``no_store``: ``Cache-Control: no-store`` for responses that show a secret once.
- ``ThrottledPasswordResetView``: password-reset mails limited per email and
  per client IP, counted in the database cache so every process shares them.
"""

from __future__ import annotations

import hashlib

from django.conf import settings
from django.contrib.auth import views as auth_views
from django.core.cache import caches
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect, JsonResponse
from django.utils.cache import add_never_cache_headers, patch_cache_control
from django.utils.http import url_has_allowed_host_and_scheme

API_PREFIX = "/api/"


def safe_next_url(request: HttpRequest, default: str) -> str:
    """The ``next`` parameter (POST first, then GET) when it is a path on this
    site (``/…``, not ``//host``), else ``default``. A bare word such as
    ``next=x`` is refused: ``redirect()`` would try it as a URL name."""
    target = request.POST.get("next") or request.GET.get("next") or ""
    if (
        target.startswith("/")
        and not target.startswith("//")
        and "\\" not in target
        and not any(ord(ch) < 32 for ch in target)
        and url_has_allowed_host_and_scheme(target, allowed_hosts={request.get_host()}, require_https=False)
    ):
        return target
    return default


def int_or_404(value) -> int:
    """A posted primary key as an int; anything else (``abc``, a huge number) is a 404."""
    try:
        number = int(str(value))
    except (TypeError, ValueError):
        raise Http404 from None
    if not 0 < number < 2**63:
        raise Http404
    return number


def no_store(response: HttpResponse) -> HttpResponse:
    """Mark ``response`` uncacheable anywhere (it shows a secret once)."""
    add_never_cache_headers(response)
    patch_cache_control(response, no_store=True, private=True)
    return response


class ApiJsonErrorsMiddleware:
    """Django answers an unresolved URL with an HTML 404, and ninja a wrong
    method with a text/plain 405; under /api/ both become the API's JSON
    error shape ``{"detail", "code"}`` (the ``Allow`` header is kept)."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        response = self.get_response(request)
        if not request.path.startswith(API_PREFIX) or response.status_code not in (404, 405):
            return response
        if response.get("Content-Type", "").startswith("application/json"):
            return response
        if response.status_code == 404:
            return JsonResponse({"detail": "Not found.", "code": "not_found"}, status=404)
        allowed = response.get("Allow", "")
        replaced = JsonResponse(
            {
                "detail": f"Method {request.method} is not allowed here; allowed: {allowed or 'none'}.",
                "code": "method_not_allowed",
            },
            status=405,
        )
        replaced["Allow"] = allowed
        return replaced


class SecurityHeadersMiddleware:
    """Headers Django's SecurityMiddleware does not set: ``Permissions-Policy``
    (the UI needs no camera, microphone, geolocation, payment, USB…)."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        response = self.get_response(request)
        policy = getattr(settings, "RB_PERMISSIONS_POLICY", "")
        if policy and "Permissions-Policy" not in response:
            response["Permissions-Policy"] = policy
        return response


# --- password reset throttling -------------------------------------------------------------


def client_ip(request: HttpRequest) -> str:
    """The client's address for throttling (axes' AXES_CLIENT_IP_CALLABLE too):
    REMOTE_ADDR, or — behind RB_PROXY_COUNT trusted reverse proxies — the
    address the outermost trusted proxy saw in X-Forwarded-For."""
    remote = request.META.get("REMOTE_ADDR", "") or ""
    count = getattr(settings, "RB_PROXY_COUNT", 0)
    if count > 0:
        hops = [h.strip() for h in request.META.get("HTTP_X_FORWARDED_FOR", "").split(",") if h.strip()]
        if len(hops) >= count:
            return hops[-count]
    return remote


def throttle_hit(*, scope: str, key: str, limit: int, window: int) -> bool:
    """Count one attempt for ``scope``/``key`` in a ``window``-second bucket;
    True while at most ``limit`` attempts were made. Counted in the shared
    (database) cache named ``throttle``, so all processes see the same count."""
    if limit <= 0:
        return True
    cache = caches[getattr(settings, "RB_THROTTLE_CACHE", "default")]
    digest = hashlib.sha256(key.strip().lower().encode("utf-8", "replace")).hexdigest()[:32]
    name = f"throttle:{scope}:{digest}"
    cache.add(name, 0, timeout=window)
    try:
        count = cache.incr(name)
    except ValueError:  # expired between add and incr
        cache.set(name, 1, timeout=window)
        count = 1
    return count <= limit


class ThrottledPasswordResetView(auth_views.PasswordResetView):
    """Django's password reset, but a flood sends no mail: at most
    RB_PASSWORD_RESET_PER_EMAIL requests per address and
    RB_PASSWORD_RESET_PER_IP per client IP each hour. Over the limit the
    page answers exactly as on success (no account enumeration) and sends nothing."""

    def form_valid(self, form):
        email = form.cleaned_data.get("email", "")
        window = getattr(settings, "RB_PASSWORD_RESET_WINDOW_SECONDS", 3600)
        ip_ok = throttle_hit(
            scope="reset-ip",
            key=client_ip(self.request),
            limit=getattr(settings, "RB_PASSWORD_RESET_PER_IP", 20),
            window=window,
        )
        email_ok = throttle_hit(
            scope="reset-email",
            key=email,
            limit=getattr(settings, "RB_PASSWORD_RESET_PER_EMAIL", 3),
            window=window,
        )
        if ip_ok and email_ok:
            return super().form_valid(form)
        # Same answer as on success: a throttled address learns nothing about accounts.
        return HttpResponseRedirect(self.get_success_url())
