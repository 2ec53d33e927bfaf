"""A secret the user must see exactly once (a new API token's secret, a
webhook's signing secret, an invitation link) across a post/redirect/get: the POST keeps it in the
server-side session, the page it redirects to takes it out and shows it,
so a reload neither repeats the POST nor shows the secret again. The
session is stored in the database (never in a cookie, unlike flash
messages), and the page that shows the secret is sent ``no_store``."""

from __future__ import annotations

_KEY = "rb_shown_once:"


def shown_once_keep(request, *, key: str, value: str | dict) -> None:
    """Keep ``value`` for the next ``shown_once_take`` of ``key`` in this session."""
    request.session[_KEY + key] = value


def shown_once_take(request, *, key: str) -> str | dict | None:
    """The value kept under ``key``, removed from the session (None when there is none)."""
    return request.session.pop(_KEY + key, None)
