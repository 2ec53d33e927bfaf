"""Django's PostgreSQL backend with a health check that costs no round trip
(settings: ``ENGINE = "reasoningbank_site.postgres"``).

With ``CONN_HEALTH_CHECKS`` Django checks a persistent connection before the
first query of every request; its check is a ``SELECT 1``, one more round trip
on every request's path (issue 14: each is felt on the retrieve API, more so
on a busy machine). A connection that broke while idle — the server restarted
or terminated it, a proxy dropped it — has something to read: the server's
termination message or the end of the stream. So: nothing to read → usable, as
the ``SELECT 1`` would have found; anything to read → Django's ``SELECT 1``
decides (it fails on a closed connection, and the connection is replaced).

And Django's query log (DEBUG, CaptureQueriesContext) shows a statement
prepared on the connection (reasoningbank_site.db.server_bound_cursor) too."""

from __future__ import annotations

import select

from django.db.backends.postgresql import base, operations


class DatabaseOperations(operations.DatabaseOperations):
    def last_executed_query(self, cursor, sql, params):
        # psycopg keeps no text of a prepared statement's execution (Django would log None): the statement as
        # sent, its parameters as placeholders.
        text = super().last_executed_query(cursor, sql, params)
        return sql if text is None else text


class DatabaseWrapper(base.DatabaseWrapper):
    ops_class = DatabaseOperations

    def is_usable(self) -> bool:
        raw = self.connection
        if raw is None or raw.closed or raw.broken:
            return False
        try:
            readable, _, _ = select.select([raw.fileno()], [], [], 0)
        except (OSError, ValueError):  # no socket, or a descriptor select() cannot watch
            readable = True
        return super().is_usable() if readable else True
