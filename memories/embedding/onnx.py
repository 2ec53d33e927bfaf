"""The ONNX export of the embedding model and the checks that a model qualifies (the encoder that runs the
export, ``OnnxSentenceEncoder``, is in memories.embedding.model, on the request path). Under ONNX Runtime the
model gives the same vectors as
sentence-transformers on PyTorch (tests hold them within 1e-5), faster on
one CPU thread (bench/README.md), and without torch in the process.

A sentence-transformers model qualifies when its pipeline is exactly
[Transformer (BERT), mean Pooling, Normalize] (all-MiniLM-L6-v2 and its kin):
then the transformer is exported once to ONNX (``memories.embedding.onnx_export``, in a
subprocess: only it imports torch) into ``RB_EMBEDDING_CACHE_DIR``, and every
process after that runs the graph with onnxruntime, tokenizes with the
model's own ``tokenizer.json`` (the Rust tokenizer behind the Hugging Face fast
tokenizer; truncation to the model's ``max_seq_length``, padding to the
longest text of a batch) and pools and normalises in numpy. Any other model
stays on PyTorch (memories.embedding.model decides).

The export is keyed by the model files' contents (one export per model version,
shared by every clone and virtualenv; by default in the user's cache directory, which
`make clean-data` leaves alone), written to a temporary directory and renamed into place
under an exclusive file lock, so processes starting together (gunicorn
workers, Celery pool processes) export once and never read a partial file.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import logging
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

log = logging.getLogger(__name__)

# Bump when the exported graph or its metadata changes: old exports are then ignored.
EXPORT_FORMAT = 1
MODEL_TYPES = {"bert"}
MODULE_TYPES = ["Transformer", "Pooling", "Normalize"]
PROJECT_ROOT = Path(__file__).resolve().parents[2]


def _read_json(path: Path) -> dict | list | None:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def unsupported_reason(location: str) -> str:
    """Why ``location`` cannot run under ONNX Runtime with the same vectors ("" when it can)."""
    root = Path(location)
    if not root.is_dir():
        return "not a local model directory"
    modules = _read_json(root / "modules.json")
    if not isinstance(modules, list) or [m.get("type", "").rsplit(".", 1)[-1] for m in modules] != MODULE_TYPES:
        return "its modules are not [Transformer, Pooling, Normalize]"
    if modules[0].get("path", "") != "":
        return "its transformer is not at the model's root"
    pooling = _read_json(root / modules[1].get("path", "") / "config.json") or {}
    modes = {key: value for key, value in pooling.items() if key.startswith("pooling_mode_")}
    if modes.get("pooling_mode_mean_tokens") is not True or any(
        v for k, v in modes.items() if k != "pooling_mode_mean_tokens"
    ):
        return "its pooling is not the mean of the tokens"
    if (_read_json(root / "config.json") or {}).get("model_type") not in MODEL_TYPES:
        return f"its transformer is not one of {sorted(MODEL_TYPES)}"
    st_config = _read_json(root / "sentence_bert_config.json") or {}
    if not isinstance(st_config.get("max_seq_length"), int) or st_config.get("do_lower_case"):
        return "its sentence_bert_config.json has no max_seq_length (or lower-cases)"
    prompts = _read_json(root / "config_sentence_transformers.json") or {}
    if prompts.get("prompts") or prompts.get("default_prompt_name"):
        return "it uses prompts"
    if not (root / "tokenizer.json").is_file():
        return "it has no tokenizer.json"
    return ""


def _stat_key(root: Path) -> str:
    """Cheap: the model directory and its files' names, sizes and modification times."""
    files = sorted(p for p in root.rglob("*") if p.is_file())
    stats = [(str(p.relative_to(root)), p.stat().st_size, p.stat().st_mtime_ns) for p in files]
    return hashlib.sha256(json.dumps([EXPORT_FORMAT, str(root), stats]).encode()).hexdigest()


def _content_key(root: Path) -> str:
    """What the export depends on: the model files' names and contents (the model's version, wherever it lies)."""
    digest = hashlib.sha256(json.dumps([EXPORT_FORMAT]).encode())
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        digest.update(str(path.relative_to(root)).encode() + b"\0")
        with open(path, "rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
    return digest.hexdigest()


def export_key(location: str, cache_dir: Path | None = None) -> str:
    """Names the export of this model by its files' contents, so every copy of the same model version (another
    clone's virtualenv, a reinstall) shares one export. Reading 90 MB takes a fraction of a second, so the
    answer is remembered in ``cache_dir`` under the files' names, sizes and times: later loads only stat them."""
    root = Path(location).resolve()
    name = re.sub(r"[^A-Za-z0-9_.-]+", "-", root.name)
    pointer = cache_dir / "locations" / _stat_key(root) if cache_dir is not None else None
    if pointer is not None and pointer.is_file():
        return pointer.read_text().strip()
    key = f"{name}-{_content_key(root)[:16]}"
    if pointer is not None:
        try:
            pointer.parent.mkdir(parents=True, exist_ok=True)
            pointer.write_text(key)
        except OSError:  # a read-only cache (a container's baked-in export): hash again next time
            pass
    return key


def ensure_export(location: str, cache_dir: Path) -> Path:
    """The directory holding ``location``'s ONNX export; exports it first when
    missing (once, whoever else is trying at the same time)."""
    target = cache_dir / export_key(location, cache_dir)
    if (target / "meta.json").is_file():
        return target
    cache_dir.mkdir(parents=True, exist_ok=True)
    with open(cache_dir / ".export.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        if (target / "meta.json").is_file():  # another process exported it while we waited
            return target
        export_to(location, target)
    return target


def export_to(location: str, target: Path) -> None:
    """Run the export subprocess into a temporary directory, then rename it to ``target``."""
    started = time.monotonic()
    work = Path(tempfile.mkdtemp(prefix=".export-", dir=target.parent))
    try:
        done = (
            subprocess.run(  # run from the project's root, so ``-m memories.embedding.onnx_export`` imports this copy
                [
                    sys.executable,
                    "-m",
                    "memories.embedding.onnx_export",
                    str(Path(location).resolve()),
                    str(work / "model.onnx"),
                ],
                cwd=PROJECT_ROOT,
                capture_output=True,
                text=True,
                timeout=600,
            )
        )
        if done.returncode != 0:
            raise RuntimeError(f"the ONNX export of {location!r} failed: {done.stderr.strip()[-2000:]}")
        input_names = done.stdout.split()
        meta = {"format": EXPORT_FORMAT, "source": str(Path(location).resolve()), "inputs": input_names}
        (work / "meta.json").write_text(json.dumps(meta))
        work.chmod(0o755)
        os.rename(work, target)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    log.info("embedding model exported to ONNX in %.1f s: %s", time.monotonic() - started, target)
