"""Helpers every app's HTML views share: which template (or named partial)
answers a request, how a POST answers (redirect, htmx client redirect,
toast), and the marker for small POST-only action
views. Access checks live in ``accounts.access``."""

from __future__ import annotations

from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST
from django_htmx.http import HttpResponseClientRedirect, reswap


def template_for(request, template: str, partials: dict[str, str]) -> str:
    """``template``, or ``template#<partial>`` when htmx asks to refresh one
    region: ``partials`` maps the id of an ``hx-target`` to the partial that
    renders it (``{"item-list": "list"}``)."""
    partial = partials.get(request.htmx.target or "") if request.htmx else None
    return f"{template}#{partial}" if partial else template


def htmx_template(request, template: str, partial: str) -> str:
    """``template#<partial>`` for any htmx request, else the whole page: for
    POST answers whose form always replaces that one region."""
    return f"{template}#{partial}" if request.htmx else template


def redirect_after_post(request, url: str):
    """Leave a successful POST for ``url``: an htmx client redirect (htmx
    then loads the whole page) or a plain 302."""
    return HttpResponseClientRedirect(url) if request.htmx else redirect(url)


def toast(request, message: str) -> HttpResponse:
    """An htmx answer that changes nothing in place but shows ``message`` in
    the toast (status 200, because htmx 2 does not swap error statuses)."""
    return reswap(render(request, "includes/toast.html", {"message": message, "oob": True}), "none")


def post_action(view):
    """A small action view: POST only (any other method answers 405). Sets
    ``view.post_action`` the way Django marks ``csrf_exempt`` views, so code
    walking the URLconf (the isolation test) can tell actions from pages."""
    wrapped = require_POST(view)
    wrapped.post_action = True
    return wrapped
