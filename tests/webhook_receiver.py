"""A real HTTP receiver for webhook tests: a thread running http.server on
127.0.0.1 that answers each POST with the next scripted status code (the
last one repeats), after ``delay`` seconds (a slow receiver), and keeps what
it got and the most requests it held at once."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@dataclass
class Received:
    path: str
    headers: dict[str, str]
    body: str
    answered: int


class Receiver:
    def __init__(self, statuses=(200,), delay: float = 0.0):
        self.statuses = list(statuses)
        self.delay = delay
        self.received: list[Received] = []
        self.in_flight = 0
        self.most_in_flight = 0
        self._lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("content-length") or 0)).decode()
                with receiver._lock:
                    receiver.in_flight += 1
                    receiver.most_in_flight = max(receiver.most_in_flight, receiver.in_flight)
                time.sleep(receiver.delay)
                with receiver._lock:
                    receiver.in_flight -= 1
                    n = len(receiver.received)
                    status = receiver.statuses[min(n, len(receiver.statuses) - 1)]
                    receiver.received.append(Received(self.path, dict(self.headers.items()), body, status))
                self.send_response(status)
                self.send_header("content-length", "2")
                self.end_headers()
                self.wfile.write(b"ok")

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/hooks"

    def start(self) -> Receiver:
        self.thread.start()
        return self

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def accepted(self) -> list[Received]:
        return [r for r in self.received if 200 <= r.answered < 300]
