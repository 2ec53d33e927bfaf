"""rb_run: its guards, and the stack it starts and stops."""

import asyncio
import json
import os
import re
import signal
import socket
import subprocess
import sys

import psutil
import pytest
from django.core.management.base import CommandError

from reasoningbank_site import embedded
from reasoningbank_site.demo import DEMO_QUERY
from tests.helpers import http_session, run
from tests.reasoningbank_site.rb_run_stack import http_json, rb_run_start, rb_run_stop, stack_env
from tests.worker import wait_for


def test_rb_run_says_clearly_when_the_port_is_taken(db):
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        port = sock.getsockname()[1]
        with pytest.raises(CommandError, match=rf"Port {port} .* already in use.*RB_PORT={port + 1}"):
            run("rb_run", "--port", str(port))


def _processes_mentioning(text: str) -> list[str]:
    """Live processes whose command line or environment mentions ``text`` (Linux /proc)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as fh:
                cmdline = fh.read().replace(b"\0", b" ").decode(errors="replace")
            with open(f"/proc/{entry}/environ", "rb") as fh:
                environ = fh.read().decode(errors="replace")
        except OSError:
            continue
        if text in cmdline or text in environ:
            found.append(f"{entry}: {cmdline[:120]}")
    return found


@pytest.mark.worker
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="checks for leftover processes through /proc")
def test_rb_run_serves_the_demo_and_leaves_no_process_behind(tmp_path):
    """The whole `make run` stack in a fresh data dir: banner (its curl
    examples run as pasted), retrieve and ingest with the banner's token,
    Ctrl-C stops everything; a second start on the same data survives its
    worker, web server and PostgreSQL being killed; a third starts clean."""
    data_dir = tmp_path / "data"
    stack = stack_env(data_dir)

    def start(log_name: str):
        log = tmp_path / log_name
        return rb_run_start(stack, log), log

    proc, log = start("run1.log")
    try:
        text = log.read_text()
        assert "awaiting_llm" in text and "RB_LLM_BASE_URL" in text
        # The banner sends people to the app, not to Django's admin, which is named for what it is.
        lines = text.splitlines()
        sign_in = next(line for line in lines if line.startswith("Sign in:"))
        assert f"http://127.0.0.1:{stack.port}/ " in sign_in and "/admin/" not in sign_in
        assert not any(line.startswith("Admin:") for line in lines)
        assert any("Django admin (raw database rows" in line for line in lines)
        token = re.search(r"API token: (rb_\S+)", text).group(1)
        assert token == stack.token()
        assert text.count(token) == 1, "the secret is printed once; the examples read it from its file"
        base = stack.api
        # The banner's shell lines, run as a user pastes them, with the port it printed.
        pasted = _banner_commands(text)
        assert len(pasted) == 3, text
        done = subprocess.run(["bash", "-ec", "\n".join(pasted[:2])], capture_output=True, text=True, timeout=60)
        assert done.returncode == 0 and json.loads(done.stdout)["items"], (done.stdout, done.stderr)
        done = subprocess.run(["bash", "-ec", f"{pasted[0]}\n{pasted[2]}"], capture_output=True, text=True, timeout=60)
        assert done.returncode == 0 and json.loads(done.stdout)["status"] == "received", (done.stdout, done.stderr)
        status, body = http_json("POST", f"{base}/retrieve", token, {"query": DEMO_QUERY})
        assert status == 200 and body["items"], body
        status, body = http_json(
            "POST",
            f"{base}/trajectories",
            token,
            {"task": "Find a cable", "steps": [{"kind": "answer", "content": "done"}]},
        )
        assert status == 202, body
        assert http_json("POST", f"{base}/retrieve", "rb_wrong", {"query": "x"})[0] == 401

        # The MCP server the banner names serves the same approved memories.
        mcp_url = re.search(r"MCP: +(http://\S+/mcp)", text).group(1)
        assert mcp_url == f"http://127.0.0.1:{stack.mcp_port}/mcp"

        async def mcp_retrieve():
            async with http_session(mcp_url, token) as session:
                return await session.call_tool("retrieve_memories", {"query": DEMO_QUERY})

        answer = asyncio.run(mcp_retrieve())
        assert not answer.is_error, answer
        served = json.loads(answer.content[0].text)
        assert served["retrieval_id"] and served["items"], served
    finally:
        rb_run_stop(proc, log)
    assert proc.returncode == 0, log.read_text()
    assert "Stopped." in log.read_text()
    wait_for(
        lambda: not _processes_mentioning(str(data_dir)),
        timeout=180,
        what=f"every process of the stack to exit: {_processes_mentioning(str(data_dir))}",
    )

    # Second start, same data: parts of the stack crash and come back without restarting rb_run.
    proc, log = start("run2.log")
    try:
        assert "Created team" not in log.read_text(), "the second start reuses the demo data"
        _crash_parts_and_check_recovery(proc, log, data_dir, base, token)
        # rb_run itself is killed outright: its children stop with it (PR_SET_PDEATHSIG).
        proc.kill()
        proc.wait()  # reaped, as `make` or a shell would
    except BaseException:
        proc.kill()
        raise
    wait_for(
        # The PostgreSQL server and the broker are daemons, not children: they may stay, and the next start adopts them.
        lambda: not [p for p in _processes_mentioning(str(data_dir)) if "postgres" not in p and "valkey" not in p],
        timeout=180,
        what=f"the children of the killed rb_run to exit: {_processes_mentioning(str(data_dir))}",
    )

    # Third start: clean (whatever PostgreSQL server and broker were left are adopted), serves, and Ctrl-C stops everything.
    proc, log = start("run3.log")
    try:
        status, body = http_json("POST", f"{base}/retrieve", token, {"query": DEMO_QUERY})
        assert status == 200 and body["items"], body
    finally:
        rb_run_stop(proc, log)
    assert proc.returncode == 0, log.read_text()
    wait_for(
        lambda: not _processes_mentioning(str(data_dir)),
        timeout=180,
        what=f"every process of the stack to exit: {_processes_mentioning(str(data_dir))}",
    )


def _banner_commands(text: str) -> list[str]:
    """The banner's shell lines: the token read from its file, then the curl examples."""
    return [line.strip() for line in text.splitlines() if line.strip().startswith(("RB_TOKEN=", "curl "))]


def _pids_of(data_dir, marker: str) -> list[int]:
    return [int(line.split(":")[0]) for line in _processes_mentioning(str(data_dir)) if marker in line]


def _crash_parts_and_check_recovery(proc, log, data_dir, base: str, token: str) -> None:
    """SIGKILL beat, the worker, the embedded broker, the web server and the PostgreSQL postmaster of a
    running rb_run: each comes back, and the stack serves again, with rb_run
    itself untouched."""

    def said(text: str) -> bool:
        if proc.poll() is not None:
            pytest.fail(f"rb_run exited with {proc.returncode}:\n{log.read_text()}")
        return text in log.read_text()

    # One worker per queue role (the pipeline's, the webhook deliveries' and the bulk work's), and beat.
    celery = [pid for pid in _pids_of(data_dir, "celery") if os.getsid(pid) == pid]
    beat = [pid for pid in celery if " beat " in " ".join(psutil.Process(pid).cmdline()) + " "]
    workers = [pid for pid in celery if pid not in beat]
    assert len(workers) == 3 and len(beat) == 1, _processes_mentioning(str(data_dir))
    # Beat dies: restarted (it runs the sweeper that re-sends lost work).
    os.kill(beat[0], signal.SIGKILL)
    wait_for(lambda: said("the beat process is back"), timeout=180, what="rb_run to restart beat")
    assert "the beat process exited (code -9); restarting it" in log.read_text()
    # The pipeline's worker dies: restarted; a trajectory sent afterwards is processed by it.
    worker = [pid for pid in workers if "--hostname rb_run@" in " ".join(psutil.Process(pid).cmdline())]
    assert len(worker) == 1, _processes_mentioning(str(data_dir))
    os.kill(worker[0], signal.SIGKILL)
    wait_for(lambda: said("the worker process is back"), timeout=180, what="rb_run to restart the worker")
    assert "the worker process exited (code -9); restarting it" in log.read_text()
    status, body = http_json(
        "POST",
        f"{base}/trajectories",
        token,
        {"task": "After the crash", "steps": [{"kind": "answer", "content": "ok"}]},
    )
    assert status == 202, body
    wait_for(
        lambda: http_json("GET", f"{base}/trajectories/{body['id']}", token)[1].get("status") == "awaiting_llm",
        timeout=180,
        what="the restarted worker to take the trajectory (no LLM configured: awaiting_llm)",
    )

    # The embedded broker dies: rb_run starts it again on the same data; a trajectory sent afterwards is taken.
    broker = embedded.broker_pid(data_dir)
    assert broker is not None, _processes_mentioning(str(data_dir))
    os.kill(broker, signal.SIGKILL)
    wait_for(lambda: said("the embedded broker was gone; started it again"), timeout=60, what="the broker back")
    status, body = http_json(
        "POST",
        f"{base}/trajectories",
        token,
        {"task": "After the broker", "steps": [{"kind": "answer", "content": "ok"}]},
    )
    assert status == 202, body
    wait_for(
        lambda: http_json("GET", f"{base}/trajectories/{body['id']}", token)[1].get("status") == "awaiting_llm",
        timeout=180,
        what="the worker to take the trajectory sent after the broker came back",
    )

    # The web server dies: restarted, serving again.
    # gunicorn's master (its session's leader); its workers go with it.
    web = [pid for pid in _pids_of(data_dir, "gunicorn") if os.getsid(pid) == pid]
    assert len(web) == 1, _processes_mentioning(str(data_dir))
    os.kill(web[0], signal.SIGKILL)
    wait_for(lambda: said("the web process is back"), timeout=180, what="rb_run to restart the web server")
    assert http_json("GET", f"{base}/trajectories/{body['id']}", token)[1]["status"] == "awaiting_llm"

    # The PostgreSQL postmaster dies: rb_run starts it again and /readyz answers 200 again.
    postmaster = int((data_dir / "pg" / "postmaster.pid").read_text().split()[0])
    os.kill(postmaster, signal.SIGKILL)
    wait_for(lambda: said("PostgreSQL is back"), timeout=180, what="rb_run to restart PostgreSQL")
    ready = base.replace("/api/v1", "/readyz")

    def readyz_ok() -> bool:
        try:
            return http_json("GET", ready, token)[0] == 200
        except OSError:
            return False

    # (The restarted web server also loads its embedding model before it says ready.)
    wait_for(readyz_ok, timeout=240, what="/readyz to answer 200 after the database came back")
    assert int((data_dir / "pg" / "postmaster.pid").read_text().split()[0]) != postmaster
    status, body = http_json("POST", f"{base}/retrieve", token, {"query": DEMO_QUERY})
    assert status == 200 and body["items"], body
    assert proc.poll() is None, "rb_run itself kept running throughout"
