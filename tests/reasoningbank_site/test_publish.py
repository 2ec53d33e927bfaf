"""enqueue_on_commit publishes after commit on the Celery app's pool of kept
broker connections: a transaction's tasks do not each open a connection, those
of a rolled-back savepoint are never published, and a kept connection the
broker dropped is replaced without losing the task. Counted on a real Redis
(its own connection counter)."""

import json
import socket
import threading

import pytest
import redis
from django.db import transaction

from reasoningbank_site import celery as celery_module
from reasoningbank_site.celery import enqueue_on_commit
from tests.worker import redis_broker  # noqa: F401

pytestmark = pytest.mark.django_db(transaction=True)  # on_commit publishes really run

TASK = "trajectories.process"  # nobody consumes the queue here: the messages stay in Redis


class Inspector:
    def __init__(self, url: str):
        self.client = redis.Redis.from_url(url, socket_timeout=5)
        self.client.ping()  # its own connection is counted before the test's

    def connections_opened(self) -> int:
        return self.client.info("stats")["total_connections_received"]

    def queued_args(self) -> list[str]:
        return [json.loads(raw)["headers"]["argsrepr"] for raw in reversed(self.client.lrange("celery", 0, -1))]


class HangingUp:
    """A listener on a dead broker's port: counts the connections made to it, closing each at once."""

    def __init__(self, port: int):
        self.server = socket.create_server(("127.0.0.1", port), reuse_port=False)
        self.accepted = 0
        self.thread = threading.Thread(target=self._serve, daemon=True)

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.server.accept()
            except OSError:  # closed
                return
            self.accepted += 1
            conn.close()

    def __enter__(self) -> "HangingUp":
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.close()
        self.thread.join(10)


@pytest.fixture
def inspector(redis_broker, monkeypatch):
    monkeypatch.setitem(celery_module._broker_down_until, "until", 0.0)  # redis_broker gave the app a new pool
    inspector = Inspector(redis_broker.url)
    inspector.client.delete("celery")
    return inspector


def test_a_transactions_tasks_share_one_connection_and_a_rolled_back_savepoints_are_not_published(inspector):
    before = inspector.connections_opened()
    with transaction.atomic():
        for n in range(30):
            enqueue_on_commit(TASK, 1000 + n)
        try:
            with transaction.atomic():
                enqueue_on_commit(TASK, 9999)  # its savepoint rolls back: never published
                raise RuntimeError("this item fails")
        except RuntimeError:
            pass
        with transaction.atomic():
            enqueue_on_commit(TASK, 2000)  # a savepoint that is released: published
        enqueue_on_commit(TASK, 1030)  # after the rollback, at the outer level again
        assert inspector.queued_args() == []  # nothing before the commit
    first = inspector.connections_opened()
    # kombu opens a connection to Redis with two sockets (its transport's channel and the producer's),
    # whatever the number of tasks; a fresh connection per task was 2 per task.
    assert first - before == 2, f"32 tasks of one transaction opened {first - before} sockets"
    expected = [f"({1000 + n},)" for n in range(31)]
    assert sorted(inspector.queued_args()) == sorted([*expected, "(2000,)"])

    with transaction.atomic():  # the next transaction reuses the kept connection
        for n in range(20):
            enqueue_on_commit(TASK, 3000 + n)
    enqueue_on_commit(TASK, 4000)  # outside a transaction: at once, same connection
    assert inspector.connections_opened() == first
    assert len(inspector.queued_args()) == 32 + 21
    assert "(9999,)" not in inspector.queued_args()


def test_a_kept_connection_the_broker_dropped_is_replaced_and_the_task_published(inspector):
    unsent: list[int] = []
    enqueue_on_commit(TASK, 1, on_failure=lambda: unsent.append(1))
    opened = inspector.connections_opened()
    # As after a Redis restart: the server closes every client connection (the inspector's is skipped).
    assert inspector.client.client_kill_filter(_type="normal") >= 1
    enqueue_on_commit(TASK, 2, on_failure=lambda: unsent.append(2))
    assert inspector.queued_args() == ["(1,)", "(2,)"]
    assert unsent == []  # published on a new connection, not left to the dispatcher
    assert inspector.connections_opened() == opened + 1
    assert celery_module._broker_down_until["until"] == 0.0  # not taken for an outage


def test_a_stopped_broker_is_tried_twice_at_once_and_the_row_left_to_the_dispatcher(inspector, redis_broker):
    """Redis gone: each publish makes two connection attempts back to back
    (the publish's one retry), never kombu's retry loop (whose pauses would
    hold the ingest request), and its row is left to the dispatcher. Counted by a listener on Redis's port that
    accepts each attempt and hangs up at once."""
    enqueue_on_commit(TASK, 1)  # a kept connection exists, as in a running web process
    redis_broker.process.kill()
    redis_broker.process.wait(10)
    port = int(redis_broker.url.rsplit(":", 1)[1].split("/")[0])
    with HangingUp(port) as listener:
        unsent: list[int] = []
        enqueue_on_commit(TASK, 2, on_failure=lambda: unsent.append(2))
        after_kept = listener.accepted
        celery_module._broker_down_until["until"] = 0.0  # past the back-off: a fresh connection is tried
        enqueue_on_commit(TASK, 3, on_failure=lambda: unsent.append(3))
        fresh = listener.accepted - after_kept
    assert unsent == [2, 3]  # both rows left to the dispatcher
    # A fresh publish is two connect attempts, the first and the publish's one retry (kombu's own
    # connect loop would go on with pauses); the broken kept one fails, then its one retry's connect
    # attempt fails: at most two attempts of two sockets.
    assert fresh == 2, fresh
    assert after_kept <= 4, after_kept
