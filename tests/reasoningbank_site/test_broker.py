"""The embedded broker's transport (reasoningbank_site.broker) against kombu's
own filesystem transport, on real folders: same messages both ways, a waiting
consumer sees a new message long before its polling interval, and two
consumers racing over one queue take each message exactly once."""

from __future__ import annotations

import contextlib
import threading
import time

from kombu import Connection, Consumer, Producer, Queue

from reasoningbank_site import embedded
from reasoningbank_site.broker import BUSY_POLL
from tests.worker import wait_for

OURS = "reasoningbank_site.broker:Transport"
QUEUE = Queue("celery", routing_key="celery")


def _connection(folder, transport=OURS, polling_interval=0.5) -> Connection:
    options = embedded.filesystem_broker_options(folder, polling_interval=polling_interval)
    return Connection("filesystem://localhost/", transport=transport, transport_options=options)


def _publish(connection: Connection, *bodies) -> None:
    producer = Producer(connection)
    for body in bodies:
        producer.publish(body, routing_key="celery", declare=[QUEUE], serializer="json")


def _drain(connection: Connection, count: int, timeout: float = 60.0) -> list:
    got = []
    with Consumer(connection, [QUEUE], accept=["json"], callbacks=[lambda body, msg: (got.append(body), msg.ack())]):
        deadline = time.monotonic() + timeout
        while len(got) < count and time.monotonic() < deadline:
            with contextlib.suppress(TimeoutError):
                connection.drain_events(timeout=0.5)
    return got


def test_messages_cross_between_kombus_transport_and_ours(tmp_path):
    assert embedded.broker_transport("filesystem://localhost/") == OURS
    assert embedded.broker_transport("redis://127.0.0.1:6379/0") is None
    with _connection(tmp_path, transport=None) as stock, _connection(tmp_path) as ours:
        _publish(stock, {"n": 1}, {"n": 2})
        assert sorted(b["n"] for b in _drain(ours, 2)) == [1, 2]
        _publish(ours, {"n": 3})
        assert _drain(stock, 1) == [{"n": 3}]
    queue_folder = tmp_path / "broker" / "queue"
    assert list(queue_folder.iterdir()) == [], "every message was taken, no partial file left behind"
    assert list((tmp_path / "broker" / "processed").iterdir()) == [], "taken messages are deleted"


def test_a_waiting_consumer_sees_a_new_message_long_before_its_polling_interval(tmp_path):
    """kombu's own transport sleeps the whole polling interval (here 60 s) after an empty poll: its
    drain would give up at its 30 s timeout with the message still in the folder."""
    with _connection(tmp_path, polling_interval=60.0) as consumer_conn, _connection(tmp_path) as producer_conn:

        def publish_once_the_consumer_waits():
            # An empty poll has raised the consumer's back-off: it is waiting, not about to poll.
            wait_for(lambda: consumer_conn.transport._wait > BUSY_POLL, timeout=30, what="an empty poll")
            _publish(producer_conn, {"n": 1})

        got = []
        with Consumer(consumer_conn, [QUEUE], accept=["json"], callbacks=[lambda b, m: (got.append(b), m.ack())]):
            thread = threading.Thread(target=publish_once_the_consumer_waits)
            thread.start()
            try:
                consumer_conn.drain_events(timeout=30)
            finally:
                thread.join()
    assert got == [{"n": 1}]


def test_two_consumers_take_each_message_exactly_once(tmp_path):
    with _connection(tmp_path) as producer:
        _publish(producer, *({"n": n} for n in range(200)))
    taken: list[int] = []  # list.append is atomic

    def consume() -> None:
        with _connection(tmp_path, polling_interval=0.05) as conn:
            callback = [lambda body, msg: (taken.append(body["n"]), msg.ack())]
            with Consumer(conn, [QUEUE], accept=["json"], callbacks=callback):
                deadline = time.monotonic() + 120  # a guard against hanging: the loop ends once all are taken
                while len(taken) < 200 and time.monotonic() < deadline:
                    with contextlib.suppress(TimeoutError):
                        conn.drain_events(timeout=0.2)

    threads = [threading.Thread(target=consume) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(taken) == list(range(200)), "no message lost, none delivered twice"
