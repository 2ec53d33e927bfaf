"""Helpers every app's HTML views share: which template (or named partial)
answers a request, how a POST answers (redirect, htmx client redirect,
toast), and the marker for small POST-only action
views. Access checks live in ``accounts.access``."""

from __future__ import annotations

import uuid
from collections.abc import Callable

from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.html import escape
from django.utils.safestring import mark_safe
from django.views.decorators.http import require_POST
from django_htmx.http import HttpResponseClientRedirect, reswap


def template_for(request, template: str, partials: dict[str, str]) -> str:
    """``template``, or ``template#<partial>`` when htmx asks to refresh one
    region: ``partials`` maps the id of an ``hx-target`` to the partial that
    renders it (``{"item-list": "list"}``)."""
    partial = partials.get(request.htmx.target or "") if request.htmx else None
    return f"{template}#{partial}" if partial else template


_PLACEHOLDER = uuid.UUID(int=0)


def reverse_each(viewname: str, key: str, **kwargs) -> Callable[[uuid.UUID], str]:
    """``reverse(viewname, kwargs={**kwargs, key: value})`` for the UUID
    ``value`` of each row of a page, with one resolver walk for the page
    instead of one per row."""
    url = reverse(viewname, kwargs={**kwargs, key: _PLACEHOLDER})
    head, _, tail = url.partition(str(_PLACEHOLDER))
    # Marked safe when the path has nothing to escape (it never has, but for a script prefix's quote):
    # a template then prints each row's link without escaping it again.
    made = mark_safe if escape(url) == url else str

    def link(value: uuid.UUID) -> str:
        if not isinstance(value, uuid.UUID):  # what the path converter would refuse
            raise TypeError(f"{key} must be a UUID, not {value!r}")
        return made(f"{head}{value}{tail}")

    return link


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
