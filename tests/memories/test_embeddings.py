"""The embedding runtimes: ONNX Runtime (the default) gives the vectors
sentence-transformers on PyTorch gives, reuses its export, and any model it
cannot reproduce (or RB_EMBEDDING_RUNTIME=torch) runs on PyTorch."""

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from sentence_transformers import SentenceTransformer

from memories.embedding import model as embeddings
from memories.embedding import onnx as onnx_embedding
from memories.embedding.model import OnnxSentenceEncoder, embed_texts, get_model

TEXTS = [
    "",
    "a",
    "find the cheapest flight from Boston to Denver next week",
    "Sign in before looking for account data",
    "Type dates instead of clicking the calendar widget\nUse when a form has a date picker.\nType an ISO date.",
    "When a search returns nothing, broaden the query terms and retry before giving up",
    "Ünïcödé ÀÉÎ — naïve café, 日本語のテキスト, Ελληνικά, emoji 🚀🧠",
    "  surrounding spaces and\ttabs\n\n",
    "UPPER CASE TEXT SHOULD MATCH lower case text",
    "word " * 400,  # far more than 256 word pieces: truncated
    "antidisestablishmentarianism " * 120,
    "x" * 3000,
    "1234567890 3.14159 2026-11-22T11:00:00Z",
    "<div class='price'>$19.99</div> click #checkout",
    "SELECT * FROM items WHERE id = 42;",
    "Verify the account balance before transferring funds between two accounts, then log it",
    "Hotels: compare the total price with taxes, not the nightly rate",
    "Trains: book the return leg before the outbound sells out",
    "Open the settings menu, then the privacy tab, then clear the cookies",
    "no",
]
QUERIES = ["book a cheap flight", "clear browser cookies", "log in to see my orders", "pick a date in a form"]


@pytest.fixture
def runtime(settings):
    """Switch RB_EMBEDDING_RUNTIME; the loaded models are cached per (location, runtime)."""

    def use(name):
        settings.RB_EMBEDDING_RUNTIME = name
        return get_model()

    return use


def test_onnx_vectors_are_the_torch_vectors_and_rank_the_same(runtime):
    assert isinstance(runtime("torch"), SentenceTransformer)
    torch_texts, torch_queries = embed_texts(TEXTS), embed_texts(QUERIES)
    assert isinstance(runtime("onnx"), OnnxSentenceEncoder)
    onnx_texts, onnx_queries = embed_texts(TEXTS), embed_texts(QUERIES)

    assert onnx_texts.shape == (len(TEXTS), 384) and onnx_texts.dtype == np.float32
    assert np.abs(onnx_texts - torch_texts).max() <= 1e-5
    assert np.abs(onnx_queries - torch_queries).max() <= 1e-5
    assert np.allclose(np.linalg.norm(onnx_texts, axis=1), 1.0, atol=1e-5)
    # One at a time (no padding) equals the batch: the attention mask is honoured.
    assert np.abs(np.stack([embed_texts([t])[0] for t in TEXTS[:6]]) - onnx_texts[:6]).max() <= 1e-5
    # A retrieval over these texts ranks them the same.
    top = lambda q, d: np.argsort(-(q @ d.T), axis=1, kind="stable")[:, :5]  # noqa: E731
    assert (top(onnx_queries, onnx_texts) == top(torch_queries, torch_texts)).all()


def test_a_second_load_reuses_the_export(runtime, settings, monkeypatch):
    first = runtime("onnx")  # exported by now (by this process or an earlier one)
    assert embeddings.model_is_loaded()

    def no_export(*args):
        raise AssertionError("exported again")

    # What another process's first load does: find the export, and run it.
    monkeypatch.setattr(onnx_embedding, "export_to", no_export)
    location = embeddings.model_location()
    export = onnx_embedding.ensure_export(location, Path(settings.RB_EMBEDDING_CACHE_DIR))
    again = OnnxSentenceEncoder(location, export, threads=1)
    assert np.abs(again.encode(TEXTS[:3]) - first.encode(TEXTS[:3])).max() <= 1e-6


def test_every_copy_of_the_same_model_version_shares_one_export(runtime, settings, monkeypatch, tmp_path):
    """Another clone's virtualenv holds the same model files at another path, with other times: its first load
    finds the export made for this one instead of exporting again; a changed model file is another version."""
    runtime("onnx")
    cache = Path(settings.RB_EMBEDDING_CACHE_DIR)
    location = embeddings.model_location()
    export = onnx_embedding.ensure_export(location, cache)
    copy = tmp_path / "other-clone" / ".venv" / "model"
    shutil.copytree(location, copy)

    def no_export(*args):
        raise AssertionError("exported again")

    monkeypatch.setattr(onnx_embedding, "export_to", no_export)
    assert onnx_embedding.ensure_export(str(copy), cache) == export
    assert (cache / "locations").is_dir(), "the next load of the copy only stats its files"
    assert onnx_embedding.ensure_export(str(copy), cache) == export
    config = json.loads((copy / "config.json").read_text())
    (copy / "config.json").write_text(json.dumps({**config, "layer_norm_eps": 1e-6}))
    assert onnx_embedding.export_key(str(copy), cache) != export.name


def test_the_export_cache_is_outside_the_data_dir_so_clean_data_keeps_it(tmp_path):
    """`make clean-data` deletes RB_DATA_DIR; the export (one per model version) lives in the user's cache."""
    import os
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if k not in {"RB_EMBEDDING_CACHE_DIR", "XDG_CACHE_HOME"}}
    # A database and broker named, so importing the settings starts no embedded server.
    env.update(
        RB_DATA_DIR=str(tmp_path / "data"),
        HOME=str(tmp_path / "home"),
        DATABASE_URL="postgresql://nobody@127.0.0.1:9/none",
        CELERY_BROKER_URL="redis://127.0.0.1:9/0",
    )
    code = "from django.conf import settings; print(settings.RB_EMBEDDING_CACHE_DIR)"
    done = subprocess.run(
        [sys.executable, "-c", f"import django; django.setup(); {code}"],
        env={**env, "DJANGO_SETTINGS_MODULE": "reasoningbank_site.settings"},
        capture_output=True,
        text=True,
        timeout=120,
        cwd=Path(__file__).resolve().parents[2],
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == str(tmp_path / "home" / ".cache" / "reasoningbank" / "onnx")


def test_other_models_and_runtime_torch_run_on_pytorch(runtime, settings, tmp_path):
    assert isinstance(runtime("torch"), SentenceTransformer)
    assert embeddings.model_is_loaded()
    mean_pooled = embed_texts(QUERIES)

    # A model whose pooling is not the mean (here: its CLS token) cannot be reproduced: PyTorch, even with "onnx".
    location = embeddings.model_location()
    assert onnx_embedding.unsupported_reason(location) == ""
    copy = tmp_path / "cls-model"
    shutil.copytree(location, copy, ignore=shutil.ignore_patterns("*.safetensors"))
    (copy / "model.safetensors").symlink_to(f"{location}/model.safetensors")
    pooling = json.loads((copy / "1_Pooling" / "config.json").read_text())
    (copy / "1_Pooling" / "config.json").write_text(
        json.dumps({**pooling, "pooling_mode_mean_tokens": False, "pooling_mode_cls_token": True})
    )
    assert "pooling" in onnx_embedding.unsupported_reason(str(copy))
    settings.RB_EMBEDDING_MODEL = str(copy)
    assert isinstance(runtime("onnx"), SentenceTransformer)
    assert embeddings.model_is_loaded()
    cls_pooled = embed_texts(QUERIES)
    assert cls_pooled.shape == (len(QUERIES), 384) and np.abs(cls_pooled - mean_pooled).max() > 1e-2
    # Nor can a pipeline without its Normalize module.
    (copy / "modules.json").write_text(json.dumps(json.loads((copy / "modules.json").read_text())[:2]))
    assert "modules" in onnx_embedding.unsupported_reason(str(copy))
