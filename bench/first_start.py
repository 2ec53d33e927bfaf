"""A first start, phase by phase: `make install` in a fresh clone with a fresh venv, then `make run` on a fresh
data directory until the login page answers and the banner is printed.

    .venv/bin/python bench/first_start.py [--repo .] [--dir /tmp/fs-bench] [--no-cache] [--cache-home DIR]
                                          [--skip-install] [--port 8450]

``--no-cache`` installs with no download cache (PIP_NO_CACHE_DIR, UV_NO_CACHE): a fresh machine's figure.
``--cache-home`` is the XDG_CACHE_HOME of `make run` (an empty one: the ONNX export is made; the same one again:
it is reused). ``--skip-install`` reuses the clone and venv in ``--dir`` (a second `make run` after
`make clean-data`). Each line of make's output is stamped with the seconds since the phase began, so the
phases (venv, each install command, database, migrations, export, demo, children) read off the log."""

from __future__ import annotations

import argparse
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

PHASES = [
    ("database started", re.compile(r"^Database: ")),
    ("migrations applied", re.compile(r"^Migrations applied")),
    ("ONNX export done", re.compile(r"exported to ONNX in")),
    ("demo seeded", re.compile(r"^Demo bank .* ready")),
    ("children starting", re.compile(r"^Starting the Celery workers")),
    ("web listening", re.compile(r"\[web\].*Listening at")),
]


def install(root: Path, env: dict[str, str]) -> None:
    started = time.monotonic()
    proc = subprocess.Popen(
        ["make", "install"], cwd=root, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    previous, label = started, "venv"
    for line in proc.stdout:
        if line.startswith(".venv/bin/"):  # make echoes each install command as it starts it
            now = time.monotonic()
            print(f"  {now - previous:6.1f} s  {label}")
            previous, label = now, line.strip()[:110]
    if proc.wait() != 0:
        sys.exit(f"make install failed ({proc.returncode})")
    now = time.monotonic()
    print(f"  {now - previous:6.1f} s  {label}")
    print(f"  {now - started:6.1f} s  make install in all")


def run(root: Path, env: dict[str, str], port: int) -> None:
    env = {**env, "RB_PORT": str(port), "RB_MCP_PORT": str(port + 1), "PYTHONUNBUFFERED": "1"}
    subprocess.run(["make", "clean-data"], cwd=root, env=env, check=True, capture_output=True)
    started = time.monotonic()
    proc = subprocess.Popen(
        ["make", "run"], cwd=root, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, bufsize=1
    )
    seen: dict[str, float] = {}
    lines: list[str] = []

    def pump() -> None:
        for line in proc.stdout:
            lines.append(line)

    threading.Thread(target=pump, daemon=True).start()
    login, read = None, 0
    while ("banner" not in seen or login is None) and proc.poll() is None and time.monotonic() - started < 600:
        now = time.monotonic() - started
        for line in lines[read:]:
            for name, pattern in PHASES:
                if name not in seen and pattern.search(line):
                    seen[name] = now
            if "Press Ctrl-C" in line:
                seen["banner"] = now
        read = len(lines)
        if login is None:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/accounts/login/", timeout=2) as answer:
                    if answer.status == 200:
                        login = seen["login page answers"] = time.monotonic() - started
            except OSError:
                pass
        time.sleep(0.2)
    rb_run = [p for p in Path("/proc").iterdir() if p.name.isdigit() and _is_rb_run(p, root)]
    for p in rb_run:
        os.kill(int(p.name), signal.SIGINT)
    proc.wait(120)
    for name, at in sorted(seen.items(), key=lambda kv: kv[1]):
        print(f"  {at:6.1f} s  {name}")


def _is_rb_run(proc_dir: Path, root: Path) -> bool:
    try:
        return b"rb_run" in (proc_dir / "cmdline").read_bytes() and Path(os.readlink(proc_dir / "cwd")) == root
    except OSError:
        return False


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repo", default=str(Path(__file__).resolve().parents[1]))
    parser.add_argument("--dir", default="/tmp/rb-first-start")
    parser.add_argument("--no-cache", action="store_true")
    parser.add_argument("--cache-home", default="")
    parser.add_argument("--skip-install", action="store_true")
    parser.add_argument("--port", type=int, default=8450)
    args = parser.parse_args()
    root = Path(args.dir)
    env = {k: v for k, v in os.environ.items() if k not in {"VIRTUAL_ENV", "RB_DATA_DIR", "DATABASE_URL", "REDIS_URL"}}
    if args.no_cache:
        env.update(PIP_NO_CACHE_DIR="1", UV_NO_CACHE="1")
    if args.cache_home:
        env["XDG_CACHE_HOME"] = args.cache_home
    print(f"load average: {os.getloadavg()[0]:.1f}")
    if not args.skip_install:
        shutil.rmtree(root, ignore_errors=True)
        subprocess.run(["git", "clone", "-q", args.repo, str(root)], check=True)
        print("make install:")
        install(root, env)
    print("make run (fresh data):")
    run(root, env, args.port)
    print(f"load average: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
