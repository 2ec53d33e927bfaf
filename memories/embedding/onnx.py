"""The embedding model under ONNX Runtime: the same vectors as
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

The export is keyed by the model directory and its files (name, size,
modification time), written to a temporary directory and renamed into place
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

import numpy as np

log = logging.getLogger(__name__)

# Bump when the exported graph or its metadata changes: old exports are then ignored.
EXPORT_FORMAT = 1
MODEL_TYPES = {"bert"}
MODULE_TYPES = ["Transformer", "Pooling", "Normalize"]
PROJECT_ROOT = Path(__file__).resolve().parents[2]
# Padded tokens per model call at most: 4096 = 16 texts of 256 word pieces (~300 MB of attention scores at the peak).
BATCH_TOKENS = 4096


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


def export_key(location: str) -> str:
    """Names the export of this model: its directory and its files' names, sizes and times."""
    root = Path(location).resolve()
    files = sorted(p for p in root.rglob("*") if p.is_file())
    stats = [(str(p.relative_to(root)), p.stat().st_size, p.stat().st_mtime_ns) for p in files]
    digest = hashlib.sha256(json.dumps([EXPORT_FORMAT, str(root), stats]).encode()).hexdigest()
    return f"{re.sub(r'[^A-Za-z0-9_.-]+', '-', root.name)}-{digest[:16]}"


def ensure_export(location: str, cache_dir: Path) -> Path:
    """The directory holding ``location``'s ONNX export; exports it first when
    missing (once, whoever else is trying at the same time)."""
    target = cache_dir / export_key(location)
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


class OnnxSentenceEncoder:
    """A [Transformer, mean Pooling, Normalize] sentence-transformers model
    run by onnxruntime. ``encode`` takes the arguments memories.embedding.model
    passes to SentenceTransformer.encode and answers the same array."""

    def __init__(self, location: str, export_dir: Path, *, threads: int = 1) -> None:
        import onnxruntime
        from tokenizers import Tokenizer

        root = Path(location)
        meta = json.loads((export_dir / "meta.json").read_text())
        self.input_names: list[str] = meta["inputs"]
        max_length = json.loads((root / "sentence_bert_config.json").read_text())["max_seq_length"]
        config = json.loads((root / "config.json").read_text())
        max_length = min(max_length, config.get("max_position_embeddings", max_length))
        self.dimension = int(config["hidden_size"])
        self.tokenizer = Tokenizer.from_file(str(root / "tokenizer.json"))
        # What the Hugging Face fast tokenizer does under sentence-transformers: truncate to
        # max_seq_length (longest first); each batch is padded here, to its longest text.
        self.tokenizer.enable_truncation(max_length=max_length, strategy="longest_first")
        padding = self.tokenizer.padding or {}  # the pad token from tokenizer.json (not its fixed length)
        self.pad_id, self.pad_type_id = padding.get("pad_id", 0), padding.get("pad_type_id", 0)
        self.tokenizer.no_padding()
        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        options.execution_mode = onnxruntime.ExecutionMode.ORT_SEQUENTIAL
        # Idle threads sleep instead of spinning: the cores are shared with the web and database processes.
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        # No arena: it would keep a long batch's peak (hundreds of MB of attention scores) for the
        # process's lifetime; freed, a query's memory goes back at once (no measurable cost per call).
        options.enable_cpu_mem_arena = False
        self.session = onnxruntime.InferenceSession(
            str(export_dir / "model.onnx"), options, providers=["CPUExecutionProvider"]
        )

    def get_sentence_embedding_dimension(self) -> int:
        return self.dimension

    def encode(self, texts: list[str], batch_size: int = 32, **_kwargs) -> np.ndarray:
        """Normalized float32 vectors of ``texts``, one row each, in order.
        Batches group texts of similar length (longest first, as
        sentence-transformers does), so little is padded, and hold at most
        ``batch_size`` texts and ``BATCH_TOKENS`` padded tokens, which bounds
        the attention's memory (rows × heads × length²)."""
        encodings = self.tokenizer.encode_batch(list(texts))
        vectors = np.empty((len(encodings), self.dimension), dtype=np.float32)
        order = sorted(range(len(encodings)), key=lambda i: -len(encodings[i].ids))
        start = 0
        while start < len(order):
            longest = len(encodings[order[start]].ids)
            rows = order[start : start + max(1, min(batch_size, BATCH_TOKENS // longest))]
            vectors[rows] = self._encode_batch([encodings[i] for i in rows])
            start += len(rows)
        return vectors

    def _encode_batch(self, encodings: list) -> np.ndarray:
        width = len(encodings[0].ids)  # the longest: the batch is sorted
        columns = {
            "input_ids": np.full((len(encodings), width), self.pad_id, dtype=np.int64),
            "attention_mask": np.zeros((len(encodings), width), dtype=np.int64),
            "token_type_ids": np.full((len(encodings), width), self.pad_type_id, dtype=np.int64),
        }
        for row, encoding in enumerate(encodings):
            n = len(encoding.ids)
            columns["input_ids"][row, :n] = encoding.ids
            columns["attention_mask"][row, :n] = 1
            columns["token_type_ids"][row, :n] = encoding.type_ids
        (hidden,) = self.session.run(["last_hidden_state"], {name: columns[name] for name in self.input_names})
        weights = columns["attention_mask"][:, :, None].astype(np.float32)
        # sentence-transformers' mean pooling (token count clamped at 1e-9) and Normalize (norm clamped at 1e-12).
        pooled = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
        return pooled / np.clip(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12, None)
