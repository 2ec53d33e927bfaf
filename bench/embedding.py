"""The embedding model's own time, ONNX Runtime against PyTorch, in one process:

    RB_DATA_DIR=/tmp/rb-bench .venv/bin/python bench/embedding.py [--rounds 60]

Loads the configured model under both runtimes (memories.embedding.model, with
RB_EMBEDDING_THREADS intra-op threads, 1 by default), then times
``model.encode`` on the shapes the service embeds: one query (a retrieve), 4
texts (a distillation's 3 items and its task, one batch), 32 item texts (a
sweeper batch), interleaved per round with alternating order, so both see the
same load. Asserts the vectors agree (max abs difference ≤ 1e-5). Prints p50 and
p90 per shape and runtime, the ratio, and the load average; then the time to
load the model in a new process for each runtime (the export already made).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import ROOT, pct, setup_django

QUERY = ["find the cheapest flight from Boston to Denver next week"]
DISTILLATION = [
    "Compare total prices, taxes included\nUse when a booking site shows nightly rates.\n"
    "The nightly rate hides taxes and fees; open the price breakdown before choosing.",
    "Broaden an empty search\nUse when a search returns no results.\n"
    "Drop the least important filter first and retry before giving up on the task.",
    "Sign in before looking for account data\nUse when the task needs a logged-in user's information.\n"
    "Find the login form first and submit the credentials; anonymous pages hide order history.",
    "Book a round trip from Boston to Denver for two adults leaving next Friday, returning Sunday",
]
SWEEP = [
    f"{text} (variant {n}, with some more words to vary the length {'x ' * n})"
    for n in range(8)
    for text in DISTILLATION
]
SHAPES = {"query (1 text)": QUERY, "distillation (4 texts)": DISTILLATION, "sweep (32 texts)": SWEEP}
LOAD_TIME = (
    "import os, time, django; django.setup(); from memories.embedding import model as embeddings; t = time.perf_counter(); "
    "embeddings.load_now(); embeddings.embed_text('warm up'); print(time.perf_counter() - t)"
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=60)
    args = parser.parse_args()
    setup_django()
    from django.conf import settings

    from memories.embedding.model import get_model

    models = {}
    for runtime in ("onnx", "torch"):
        settings.RB_EMBEDDING_RUNTIME = runtime
        models[runtime] = get_model()
    assert type(models["onnx"]).__name__ == "OnnxSentenceEncoder", type(models["onnx"])
    encode = {
        name: (lambda texts, m=model: m.encode(texts, normalize_embeddings=True)) for name, model in models.items()
    }
    for texts in SHAPES.values():
        diff = np.abs(np.asarray(encode["onnx"](texts)) - np.asarray(encode["torch"](texts))).max()
        assert diff <= 1e-5, diff
    loads = []
    for shape, texts in SHAPES.items():
        times = {name: [] for name in encode}
        for _ in range(3):
            for fn in encode.values():
                fn(texts)
        for n in range(args.rounds):
            for name in list(encode)[:: 1 if n % 2 else -1]:
                started = time.perf_counter()
                encode[name](texts)
                times[name].append((time.perf_counter() - started) * 1000)
        loads.append(os.getloadavg()[0])
        onnx, torch = (statistics.median(times[name]) for name in ("onnx", "torch"))
        print(
            f"shape={shape!r} onnx_p50_ms={onnx:.2f} torch_p50_ms={torch:.2f} onnx_over_torch={onnx / torch:.2f} "
            f"onnx_p90_ms={pct(times['onnx'], 90):.2f} torch_p90_ms={pct(times['torch'], 90):.2f} load1={loads[-1]:.2f}"
        )
    for runtime in ("onnx", "torch"):
        env = {**os.environ, "RB_EMBEDDING_RUNTIME": runtime, "PYTHONPATH": str(ROOT)}
        done = subprocess.run([sys.executable, "-c", LOAD_TIME], env=env, cwd=ROOT, capture_output=True, text=True)
        assert done.returncode == 0, done.stderr[-2000:]
        print(
            f"runtime={runtime} new_process_load_and_first_embed_s={float(done.stdout.split()[-1]):.2f} load1={os.getloadavg()[0]:.2f}"
        )


if __name__ == "__main__":
    main()
