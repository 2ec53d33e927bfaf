"""A local HTTP server speaking the OpenAI chat-completions protocol, scripted
per test, so the real ``openai`` client code path runs against it.

    fake_llm.reply('{"verdict": "success", "rationale": "..."}')   # queue answers in order
    fake_llm.error(429, retry_after=1)                             # then a rate limit
    fake_llm.reply("...", delay=2.0)                               # an answer slower than the client timeout
    fake_llm.reply("...", usage={"prompt_tokens": 7, "completion_tokens": 3})  # usage as sent (None: none)
    fake_llm.responder = lambda messages: "..."                    # or answer by content (when the queue is empty)
    fake_llm.down = True                                           # every request answers 503 (an outage)

GET /v1/models answers a model list (the app's endpoint probe), or 503 while ``down``.

Every request is recorded in ``fake_llm.requests`` (the parsed JSON body).
When nothing is scripted the server answers 500 with a message naming the
missing script, so a test fails loudly instead of hanging."""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@dataclass
class Scripted:
    status: int = 200
    text: str = ""
    delay: float = 0.0
    headers: dict = field(default_factory=dict)
    raw_body: bytes | None = None
    # The answer's usage field: True counts words (prompt: every message's; completion: the answer's),
    # None leaves the field out, a dict is sent as it is.
    usage: dict | bool | None = True


class FakeLLM:
    def __init__(self):
        self.script: deque[Scripted] = deque()
        self.requests: list[dict] = []
        self.responder: Callable[[list[dict]], str | Scripted] | None = None
        self.down = False
        self.probes = 0  # GET requests served (the app's endpoint probe)
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler_class())
        self._server.daemon_threads = True
        # serve_forever checks for shutdown every poll_interval (0.5 s by default): stop() waits that long.
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, name="fake-llm", daemon=True
        )

    # --- scripting -----------------------------------------------------------------
    def reply(self, text: str, *, delay: float = 0.0, usage: dict | bool | None = True) -> FakeLLM:
        self.script.append(Scripted(text=text, delay=delay, usage=usage))
        return self

    def error(self, status: int, message: str = "scripted error", *, retry_after: float | None = None) -> FakeLLM:
        headers = {"Retry-After": f"{retry_after:g}"} if retry_after is not None else {}
        body = json.dumps({"error": {"message": message, "type": "scripted", "code": status}}).encode()
        self.script.append(Scripted(status=status, headers=headers, raw_body=body))
        return self

    @property
    def base_url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}/v1"

    @property
    def prompts(self) -> list[str]:
        """The last user message of every request, in order."""
        return [
            next((m["content"] for m in reversed(r.get("messages", [])) if m.get("role") == "user"), "")
            for r in self.requests
        ]

    # --- lifecycle --------------------------------------------------------------------
    def start(self) -> FakeLLM:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    # --- serving ----------------------------------------------------------------------
    def _next(self, body: dict) -> Scripted:
        with self._lock:
            self.requests.append(body)
            if self.down:
                return Scripted(status=503, raw_body=b'{"error": {"message": "fake LLM: down"}}')
            if self.script:
                return self.script.popleft()
        if self.responder is not None:
            answer = self.responder(body.get("messages", []))
            return answer if isinstance(answer, Scripted) else Scripted(text=answer)
        return Scripted(status=500, raw_body=b'{"error": {"message": "fake LLM: no scripted response left"}}')

    def _handler_class(self):
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):  # keep test output clean
                pass

            def do_GET(self):
                with fake._lock:
                    fake.probes += 1
                if fake.down:
                    return self._send(503, b'{"error": {"message": "fake LLM: down"}}')
                if not self.path.rstrip("/").endswith("/models"):
                    return self._send(404, b'{"error": {"message": "fake LLM serves /models only"}}')
                self._send(
                    200, b'{"object": "list", "data": [{"id": "fake-model", "object": "model", "owned_by": "fake"}]}'
                )

            def do_POST(self):
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length)
                try:
                    body = json.loads(raw or b"{}")
                except ValueError:
                    body = {"unparseable": raw.decode(errors="replace")}
                if not self.path.rstrip("/").endswith("/chat/completions"):
                    return self._send(404, b'{"error": {"message": "fake LLM serves /chat/completions only"}}')
                scripted = fake._next(body)
                if scripted.delay:
                    time.sleep(scripted.delay)
                if scripted.raw_body is not None:
                    return self._send(scripted.status, scripted.raw_body, scripted.headers)
                payload = {
                    "id": f"chatcmpl-fake-{len(fake.requests)}",
                    "object": "chat.completion",
                    "created": int(time.time()),
                    "model": body.get("model", "fake"),
                    "choices": [
                        {
                            "index": 0,
                            "message": {"role": "assistant", "content": scripted.text},
                            "finish_reason": "stop",
                        }
                    ],
                }
                if scripted.usage is True:
                    prompt = sum(len(str(m.get("content", "")).split()) for m in body.get("messages", []))
                    completion = len(scripted.text.split())
                    payload["usage"] = {
                        "prompt_tokens": prompt,
                        "completion_tokens": completion,
                        "total_tokens": prompt + completion,
                    }
                elif scripted.usage is not None:
                    payload["usage"] = scripted.usage
                self._send(scripted.status, json.dumps(payload).encode(), scripted.headers)

            def _send(self, status: int, body: bytes, headers: dict | None = None):
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(body)))
                    for key, value in (headers or {}).items():
                        self.send_header(key, value)
                    self.end_headers()
                    self.wfile.write(body)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (timeout test)

        return Handler
