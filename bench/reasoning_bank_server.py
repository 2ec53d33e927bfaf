"""The ``reasoning-bank`` PyPI library behind a JSON-lines pipe, for
bench/compare_reasoning_bank.py. Runs under a Python whose sqlite3 can load
extensions (the library's sqlite-vec store needs it), in its own venv:

    /usr/bin/python3 -m venv /tmp/rb-lib && /tmp/rb-lib/bin/pip install reasoning-bank

One request per stdin line, one JSON answer per stdout line:
  {"op": "load", "db": path, "ids": path.json, "vectors": path.npy, "model": dir}
  {"op": "retrieve", "query": text, "k": 10}  → {"ids": [...], "ms": library time}
Items get the caller's vectors (the same rows as the service's database); the
query is embedded by the library's own MiniLM embedder on the same local model."""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import numpy as np
import torch
from reasoning_bank import ReasoningBank
from reasoning_bank.embedders.minilm import MiniLMEmbedder
from reasoning_bank.item import MemoryItem
from reasoning_bank.stores.sqlite_vec import SQLiteVecStore

torch.set_num_threads(1)  # as the service's web worker (RB_EMBEDDING_THREADS=1)


async def no_llm(prompt, *, system=None) -> str:
    raise RuntimeError("retrieval needs no LLM")


def main() -> None:
    loop = asyncio.new_event_loop()
    bank = None
    for line in sys.stdin:
        request = json.loads(line)
        if request["op"] == "load":
            if os.path.exists(request["db"]):
                os.remove(request["db"])
            store = SQLiteVecStore(db_path=request["db"])
            with open(request["ids"]) as f:
                ids = json.load(f)
            vectors = np.load(request["vectors"])
            for item_id, vector in zip(ids, vectors):
                item = MemoryItem(
                    id=item_id,
                    title=f"Bench lesson {item_id}",
                    description="Use when a synthetic benchmark task looks like this one.",
                    content="A synthetic lesson used to measure retrieval latency and recall.",
                    source="success",
                    task_signature="",
                    embedding=[float(x) for x in vector],
                )
                store.add(item)
            embedder = MiniLMEmbedder(model_name=request["model"], device="cpu")
            embedder.embed(["warm up"])
            bank = ReasoningBank(llm=no_llm, store=store, embedder=embedder)
            answer = {"loaded": len(ids)}
        elif request["op"] == "retrieve":
            started = time.perf_counter()
            items = loop.run_until_complete(bank.retrieve(request["query"], k=request["k"], min_confidence=0.0))
            answer = {"ids": [item.id for item in items], "ms": (time.perf_counter() - started) * 1000}
        else:
            answer = {"error": f"unknown op {request['op']!r}"}
        sys.stdout.write(json.dumps(answer) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
