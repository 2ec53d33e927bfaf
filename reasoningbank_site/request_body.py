"""Read and discard whatever of a request body the application left unread,
before the answer is sent, so a client still sending its body gets that answer
(a 413 for a body over the limit, a 401 for a bad token) instead of a
connection reset.

Why: the API answers a body over RB_API_MAX_BODY_BYTES from its
Content-Length without reading it. gunicorn then closes the connection when
the client asked for that (``Connection: close``, as urllib and curl send),
and a socket closed with unread data makes the kernel send a reset: the client
sees a broken pipe, which clients retry. gunicorn already discards an unread
body for clients that keep the connection open (before it parses their next
request); this does the same for every client, up to DISCARD_MAX_BYTES, past
which the connection is closed as before."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable
from typing import Any

DISCARD_MAX_BYTES = 64 * 1024 * 1024
CHUNK_BYTES = 256 * 1024

WSGIApp = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]


def unread_body_discard(environ: dict[str, Any], *, limit: int = DISCARD_MAX_BYTES) -> int:
    """Read and drop what is left of the request body, at most ``limit`` bytes; how many were read."""
    stream = environ.get("wsgi.input")
    if stream is None:
        return 0
    read = 0
    while read < limit:
        chunk = stream.read(min(CHUNK_BYTES, limit - read))
        if not chunk:
            break
        read += len(chunk)
    return read


def discarding_unread_body(app: WSGIApp) -> WSGIApp:
    """``app``, with any body it did not read discarded before its answer is sent."""

    def wrapped(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        result = app(environ, start_response)
        with contextlib.suppress(OSError):  # the client went away: the server notices when it writes the answer
            unread_body_discard(environ)
        return result

    return wrapped


def body_within(request, *, limit: int, too_large: Callable[[int], Exception]) -> bytes:
    """The raw body of ``request``, for a route that takes a file as its body with a limit of its own
    (``limit`` bytes, not the API's DATA_UPLOAD_MAX_MEMORY_SIZE): raises ``too_large(size)`` when the
    Content-Length says it is over, without reading it; else reads at most ``limit`` + 1 bytes from the
    stream, so a body sent without a Content-Length is over the limit by its length."""
    try:
        length = int(request.META.get("CONTENT_LENGTH") or 0)
    except ValueError:
        length = 0
    if length > limit:
        raise too_large(length)
    return request.read(limit + 1)
