"""The web server's worker class: gunicorn's threaded worker (gthread) that
takes a new connection only while one of its threads is free.

Why (issue 14): gunicorn's workers share one listening socket, and a gthread
worker accepts every connection it is woken for, busy or not. Agents keep
their connections open, so where the connections land at the start is where
their requests go until they close. Measured with ``bench/ingest.py``
(12 kept-alive clients, 2 workers × 4 threads): the split was anything from
6/6 to 11/1, and then one worker's GIL served most requests while the other
worker's core had room (the README's benchmarks). A busy worker that leaves a
new connection in the backlog lets a worker with a free thread take it, so
the connections spread over the workers as they have room for them.

A worker with every thread busy still serves the connections it already
holds (they queue for its threads as before); only new connections wait in
the listening socket's backlog, as they do with gunicorn's sync workers,
until a thread of any worker is free.

It overrides two methods of gunicorn's ThreadWorker (``enqueue_req`` and
``finish_request``, both run on the worker's main thread) and the
``worker_connections`` limit its loop compares ``nr_conns`` with, hence the
pin of gunicorn's major version in pyproject.toml;
``tests/reasoningbank_site/test_gunicorn_worker.py`` runs it in a real gunicorn."""

from __future__ import annotations

from gunicorn.workers.gthread import ThreadWorker


class BalancedThreadWorker(ThreadWorker):
    """gthread, accepting only while a thread is free (see the module's docstring)."""

    def __init__(self, *args, **kwargs):
        self.busy = 0  # requests handed to the thread pool and not finished: main thread only
        super().__init__(*args, **kwargs)

    # gunicorn's loop accepts while ``nr_conns < worker_connections``: while every
    # thread is busy the limit is what the worker holds already, so it accepts nothing.
    @property
    def worker_connections(self) -> int:
        return self._connection_limit if self.busy < self.cfg.threads else self.nr_conns

    @worker_connections.setter
    def worker_connections(self, limit: int) -> None:
        self._connection_limit = limit

    def enqueue_req(self, conn):
        self.busy += 1
        super().enqueue_req(conn)

    def finish_request(self, conn, fs):
        self.busy -= 1  # before gunicorn's, which may hand the connection to a thread again
        super().finish_request(conn, fs)
