"""How long the first approval after a start takes, with the embedding
enqueued and with it done inside the request.

    RB_DATA_DIR=/tmp/rb-bench .venv/bin/python bench/approve_latency.py [--items 5]

Each mode runs in a fresh process (the embedding model not loaded yet, as
after a restart), on the bench database: ``--items`` proposed items whose
embedding is missing (just edited, the embed task not run yet) are
approved one after the other with ``memory_item_approve``.

- ``enqueue`` (what the service does): the approval commits without embedding and enqueues
  ``memories.embed_item``; asserted per item: approved, no embedding yet.
- ``inline`` (the alternative it avoids): embed the item first, in the
  request (``item_embed_inline``) — then the same approval; asserted:
  approved with a current embedding.

Prints the first and the later approvals' times per mode."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
import uuid

from common import setup_django


def _run(mode: str, n: int) -> dict:
    setup_django()
    from memories.embedding.items import item_embed_inline, item_embedding_is_current
    from memories.items.models import ItemStatus, MemoryItem
    from memories.review.decisions import memory_item_approve
    from tests import factories

    user = factories.make_user(f"bench-{uuid.uuid4().hex[:8]}")
    bank = factories.make_bank(team=factories.make_team(owner=user, slug=f"approve-{uuid.uuid4().hex[:6]}"))
    # Stored as a write leaves them before the embed task runs (a new item is embedded inline by the
    # near-duplicate check, which would load the model before the measured approval).
    items = MemoryItem.objects.bulk_create(
        MemoryItem(bank=bank, title=f"Lesson {i}", description="When it applies.", content=f"Do {i}.", origin="manual")
        for i in range(n)
    )
    times = []
    for item in items:
        started = time.perf_counter()
        if mode == "inline":
            fields = item_embed_inline(item)
            item.save(update_fields=fields)
        memory_item_approve(item=item, author=user)
        times.append((time.perf_counter() - started) * 1000)
        item = MemoryItem.objects.get(pk=item.pk)
        assert item.status == ItemStatus.APPROVED
        assert item_embedding_is_current(item) == (mode == "inline"), (mode, item.embedding_hash)
    return {"mode": mode, "first_ms": round(times[0], 1), "later_ms": [round(t, 1) for t in times[1:]]}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--items", type=int, default=5)
    parser.add_argument("--mode", choices=["enqueue", "inline"])
    args = parser.parse_args()
    if args.mode:
        print(json.dumps(_run(args.mode, args.items)))
        return
    for mode in ("enqueue", "inline"):
        out = subprocess.run(
            [sys.executable, __file__, "--mode", mode, "--items", str(args.items)],
            check=True,
            capture_output=True,
            text=True,
        ).stdout
        result = json.loads(out.strip().splitlines()[-1])
        later = ", ".join(f"{t:.1f}" for t in result["later_ms"])
        print(f"{mode:8s} first approval {result['first_ms']:8.1f} ms   later: {later} ms")


if __name__ == "__main__":
    main()
