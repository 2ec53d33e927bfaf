"""Django's PostgreSQL backend with a health check that costs no round trip
(settings: ``ENGINE = "reasoningbank_site.postgres"``).

With ``CONN_HEALTH_CHECKS`` Django checks a persistent connection before the
first query of every request with a ``SELECT 1``: one more round trip on
every request's path, each of which waits for the database process to be
scheduled (on a busy machine, milliseconds). A connection that broke while
idle (the server restarted or terminated it, a proxy dropped it) has something
to read: the server's termination message or the end of the stream. So:
nothing to read → usable, as the ``SELECT 1`` would have found; anything to
read → Django's ``SELECT 1`` decides (it fails on a closed connection, and the
connection is replaced). Remove this package (and set ENGINE back to
``django.db.backends.postgresql``) once a request's round trips are cheap
where it runs: the behaviour is Django's either way."""

from __future__ import annotations

import select

from django.db.backends.postgresql import base


class DatabaseWrapper(base.DatabaseWrapper):
    def is_usable(self) -> bool:
        raw = self.connection
        if raw is None or raw.closed or raw.broken:
            return False
        try:
            readable, _, _ = select.select([raw.fileno()], [], [], 0)
        except (OSError, ValueError):  # no socket, or a descriptor select() cannot watch
            readable = True
        return super().is_usable() if readable else True
