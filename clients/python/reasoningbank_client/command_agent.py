"""``CommandAgent``: the team's agent as a command, for ``rb eval run <id> -- <command...>``.

For each try the command is started with the try's JSON on stdin and these variables in its
environment (besides the harness's own): ``RB_EVAL_RUN`` (the evaluation's id), ``RB_EVAL_TRY`` (the
try's id), ``RB_EVAL_ARM`` (candidate, production, none or control), ``RB_EVAL_TASK_ID`` (the task's id
in its set), ``RB_EVAL_EXTRA_TOKENS`` (the tokens the control may spend beyond the budget; 0 in the
other arms) and ``RB_EVAL_TOKEN_BUDGET`` (empty when the run sets none). It must print ONE JSON object on
stdout, ``{"final_answer", "steps" | "messages", "outcome"?, "usage"?, "metadata"?}``, and may log
anything to stderr (passed through to the harness's stderr). A non-zero exit, a timeout, or stdout that
is not one JSON object raises ``AgentError`` (the try is recorded as a failure with it as the last
step, the end of the command's stderr included).

Each command runs in its own process group, so a Ctrl-C at the terminal reaches the harness alone; the
harness then stops every command (``interrupt``) and records none of the tries in progress."""

from __future__ import annotations

import collections
import json
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Mapping, Sequence
from typing import IO, Any

from reasoningbank_client.harness import AgentError

STDERR_TAIL_LINES = 20
STOP_GRACE_SECONDS = 5.0


def try_environment(attempt: Mapping[str, Any]) -> dict[str, str]:
    """The variables a try's command gets."""
    task = attempt.get("task") or {}
    budget = attempt.get("token_budget")
    return {
        "RB_EVAL_RUN": str(attempt.get("evaluation", "")),
        "RB_EVAL_TRY": str(attempt.get("id", "")),
        "RB_EVAL_ARM": str(attempt.get("arm", "")),
        "RB_EVAL_TASK_ID": str(task.get("id", "")),
        "RB_EVAL_EXTRA_TOKENS": str(attempt.get("extra_tokens") or 0),
        "RB_EVAL_TOKEN_BUDGET": "" if budget is None else str(budget),
    }


def parse_output(raw: bytes) -> dict[str, Any]:
    """The one JSON object the command printed; AgentError saying what is wrong otherwise."""
    text = raw.decode("utf-8", errors="replace").strip()
    if not text:
        raise AgentError("the agent command printed nothing on stdout; it must print one JSON object")
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise AgentError(
            f"the agent command's stdout is not one JSON object ({exc.msg}, line {exc.lineno}): "
            f"{text[:200]!r}; print logs to stderr"
        ) from None
    if not isinstance(value, dict):
        raise AgentError(f"the agent command must print one JSON object, got a JSON {type(value).__name__}")
    return value


def _exit_reason(code: int) -> str:
    if code < 0:
        try:
            return f"was killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"was killed by signal {-code}"
    return f"exited with status {code}"


class CommandAgent:
    """An agent callable (``agent(try) -> dict``) running ``argv`` once per try; ``timeout`` in seconds."""

    def __init__(self, argv: Sequence[str], *, timeout: float | None = None, stderr: IO[str] | None = None):
        if not argv:
            raise ValueError("no agent command")
        self.argv = list(argv)
        self.timeout = timeout
        self._stderr = stderr or sys.stderr
        self._running: set[subprocess.Popen] = set()
        self._lock = threading.Lock()
        self._stopping = False

    def __call__(self, attempt: dict[str, Any]) -> dict[str, Any]:
        with self._lock:
            if self._stopping:
                raise AgentError("the harness is stopping")
            try:
                process = subprocess.Popen(
                    self.argv,
                    stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE,
                    env={**os.environ, **try_environment(attempt)},
                    start_new_session=True,
                )
            except OSError as exc:
                raise AgentError(f"could not start the agent command {self.argv[0]!r}: {exc}") from None
            self._running.add(process)
        try:
            return self._finish(process, json.dumps(attempt).encode())
        finally:
            with self._lock:
                self._running.discard(process)

    def _finish(self, process: subprocess.Popen, stdin: bytes) -> dict[str, Any]:
        tail: collections.deque[str] = collections.deque(maxlen=STDERR_TAIL_LINES)
        out: list[bytes] = []
        readers = [
            threading.Thread(target=self._feed, args=(process.stdin, stdin), daemon=True),
            threading.Thread(target=lambda: out.append(process.stdout.read()), daemon=True),
            threading.Thread(target=self._pass_stderr, args=(process.stderr, tail), daemon=True),
        ]
        for reader in readers:
            reader.start()
        try:
            code = process.wait(timeout=self.timeout)
        except subprocess.TimeoutExpired:
            self._kill(process, signal.SIGKILL)
            process.wait()
            raise AgentError(f"the agent command timed out after {self.timeout:g} s") from None
        finally:
            for reader in readers:
                reader.join(STOP_GRACE_SECONDS)
        if code != 0:
            said = "".join(tail).strip()
            raise AgentError(
                f"the agent command {_exit_reason(code)}" + (f"; its stderr ended with:\n{said}" if said else "")
            )
        return parse_output(out[0] if out else b"")

    @staticmethod
    def _feed(pipe: IO[bytes] | None, data: bytes) -> None:
        if pipe is None:
            return
        try:
            pipe.write(data)
            pipe.close()
        except (BrokenPipeError, OSError):  # the command did not read its stdin: its choice
            pass

    def _pass_stderr(self, pipe: IO[bytes] | None, tail: collections.deque[str]) -> None:
        if pipe is None:
            return
        for raw in iter(pipe.readline, b""):
            line = raw.decode("utf-8", errors="replace")
            tail.append(line)
            try:
                self._stderr.write(line)
                self._stderr.flush()
            except (OSError, ValueError):
                pass

    @staticmethod
    def _kill(process: subprocess.Popen, sig: int) -> None:
        try:
            os.killpg(process.pid, sig)
        except (ProcessLookupError, PermissionError, AttributeError):  # gone already, or no process groups
            if process.poll() is None:
                process.kill()

    def interrupt(self) -> None:
        """Stop every command in progress (SIGTERM to its process group, SIGKILL after a grace period)
        and start no more."""
        with self._lock:
            self._stopping = True
            running = list(self._running)
        for process in running:
            self._kill(process, signal.SIGTERM)
        for process in running:
            try:
                process.wait(STOP_GRACE_SECONDS)
            except subprocess.TimeoutExpired:
                self._kill(process, signal.SIGKILL)
