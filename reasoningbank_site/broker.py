"""The embedded broker's transport: kombu's filesystem transport (same folder,
same file names and format — a stock kombu client reads and writes the same
queue) with a consumer that keeps up with the pipeline. Settings selects it
(CELERY_BROKER_TRANSPORT) whenever the broker URL is ``filesystem://``.

Stock kombu 5 caps the embedded pipeline's throughput whatever a task costs
(bench/pipeline_throughput.py; figures in bench/README.md), for three reasons:

1. After a poll that delivers nothing, the worker sleeps the whole polling
   interval (1 s). With late acks and prefetch = concurrency, a worker whose
   pool slots are all busy stops consuming, so every poll made while its tasks
   run comes back empty, and the next message waits up to a full second after
   a slot frees: two tasks per second with concurrency 2. Here the wait after
   an empty poll starts at ``BUSY_POLL`` (10 ms) and doubles per empty poll up
   to ``polling_interval`` (RB_BROKER_POLLING_INTERVAL), a delivery resets it;
   and while the prefetch window is full the worker polls again as soon as a
   slot frees (a counter checked every ``BUSY_POLL``, no file system access).
   An idle worker polls no more often than stock kombu's; the next task is
   taken within ``BUSY_POLL`` of a slot freeing.
2. kombu's ``_get`` lists the folder, sorts every name and pops names off the
   front of the list one by one — quadratic in the backlog — for each queue
   polled (the task queue, the worker's pidbox, ...), so a queue with no
   message of its own scans the whole backlog. Here: one listing, only the
   queue's own names, oldest first.
3. kombu moves a claimed message to the system temp dir — a copy and a delete
   when that is another file system, which two consumers can both copy — and
   its publisher creates the file before writing it, so a consumer can claim
   it empty. Here a publisher writes a hidden temporary file and renames it
   into the queue, and a consumer claims a message by renaming it into the
   processed folder next to the queue: both atomic, one winner.
"""

from __future__ import annotations

import os
import uuid
from queue import Empty
from time import monotonic, sleep

from kombu.exceptions import ChannelError
from kombu.transport import filesystem
from kombu.utils.encoding import bytes_to_str, str_to_bytes
from kombu.utils.json import dumps, loads
from kombu.utils.objects import cached_property

BUSY_POLL = 0.01
POLL_ONCE = 1e-9  # a timeout kombu's drain_events has always passed after one empty poll


class Channel(filesystem.Channel):
    @cached_property
    def claim_folder(self) -> str:
        """Where a consumer renames the message it takes: the processed folder, on the queue's file system."""
        os.makedirs(self.processed_folder, exist_ok=True)
        return self.processed_folder

    def _put(self, queue, payload, **kwargs):
        # kombu's name (creation time in ms first, so names sort oldest first), written aside then renamed in.
        name = f"{round(monotonic() * 1000)}_{uuid.uuid4()}.{queue}.msg"
        final = os.path.join(self.data_folder_out, name)
        partial = os.path.join(self.data_folder_out, f".{name}.partial")
        try:
            with open(partial, "wb") as fh:
                fh.write(str_to_bytes(dumps(payload)))
            os.replace(partial, final)
        except OSError as exc:
            raise ChannelError(f"Cannot add file {final!r} to directory") from exc

    def _get(self, queue):
        wanted = f"{queue}.msg"
        folder = self.data_folder_in
        names = sorted(name for name in os.listdir(folder) if name.partition(".")[2] == wanted)
        for name in names:
            claimed = os.path.join(self.claim_folder, name)
            try:
                os.rename(os.path.join(folder, name), claimed)
            except FileNotFoundError:
                continue  # another consumer claimed it first
            except OSError as exc:
                raise ChannelError(f"Cannot claim {name!r} into {self.processed_folder!r}") from exc
            try:
                with open(claimed, "rb") as fh:
                    payload = fh.read()
                if not self.store_processed:
                    os.remove(claimed)
            except OSError as exc:
                raise ChannelError(f"Cannot read file {claimed!r} from queue.") from exc
            return loads(bytes_to_str(payload))
        raise Empty()


class Transport(filesystem.Transport):
    Channel = Channel
    global_state = filesystem.Transport.global_state  # one exchange table per process, as kombu's

    def __init__(self, client, **kwargs):
        super().__init__(client, **kwargs)
        self._wait = BUSY_POLL  # the current back-off; a delivery resets it

    def _window_full(self) -> bool:
        """A consuming channel has as many unacked messages as its prefetch allows (its pool is busy); a
        channel that only publishes has no prefetch limit, so it never counts."""
        return any(not channel.qos.can_consume() for channel in self.channels)

    def _poll_once(self, connection) -> bool:
        """One poll of the queues through kombu's own drain_events: deliver a
        message (True), or find none (False) without sleeping."""
        try:
            super().drain_events(connection, timeout=POLL_ONCE)
        except TimeoutError:  # socket.timeout
            return False
        return True

    def drain_events(self, connection, timeout=None):
        """Deliver one message. After an empty poll, wait the current back-off
        (doubled each time, up to polling_interval) before polling the folder
        again — but while the prefetch window is full, poll again as soon as
        a slot frees (checked every BUSY_POLL, no file system access)."""
        started = monotonic()
        ceiling = max(self.polling_interval or BUSY_POLL, BUSY_POLL)
        while True:
            if self._poll_once(connection):
                self._wait = BUSY_POLL
                return
            end = started + timeout if timeout is not None else float("inf")
            until = min(monotonic() + self._wait, end)
            self._wait = min(self._wait * 2, ceiling)
            if self._window_full():
                while self._window_full() and monotonic() < until:
                    sleep(BUSY_POLL)
            else:
                sleep(max(0.0, until - monotonic()))
            if monotonic() >= end:
                raise TimeoutError()  # socket.timeout, as kombu raises
