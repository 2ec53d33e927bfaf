"""Record the paraphrased instructions found in items just proposed from one run."""

from __future__ import annotations

from collections.abc import Sequence

from memories.embedding.items import item_embedding_is_current
from memories.items.models import MemoryItem
from memories.trust.paraphrase.detector import DETECTOR, scan
from memories.trust.risk_models import FindingSource, RiskFinding


def memory_items_paraphrase_scan(
    *, items: Sequence[MemoryItem], steps: Sequence[dict] = (), task: str = ""
) -> list[RiskFinding]:
    """Store a ``copied_instruction`` finding (detector ``paraphrase-1``) for
    each sentence of the new proposals among ``items`` that restates a directive
    of the run's external content (``steps``) rather than the user's ``task``:
    the excerpt is the item's sentence, ``step`` the directive's step. Items
    the bank already held (``supported_by`` set) are skipped, as the risk scan
    skips them."""
    new = [i for i in items if getattr(i, "supported_by", None) is None and i.pk is not None]
    if not new:
        return []
    texts = [(i.title, i.description, i.content) for i in new]
    # The vector stored for each item (embedded when proposed) is of its whole text, as scan wants.
    vectors = [i.embedding if item_embedding_is_current(i) else None for i in new]
    found = scan(texts, list(steps or ()), task, vectors)
    rows = [
        RiskFinding(
            item=item, kind=f.kind, excerpt=f.excerpt, step=f.step, found_in=FindingSource.ITEM, detector=DETECTOR
        )
        for item, findings in zip(new, found, strict=True)
        for f in findings
    ]
    return RiskFinding.objects.bulk_create(rows) if rows else []
