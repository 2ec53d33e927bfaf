"""An item's provenance as the item page shows it: each field cut into
segments (text, source, step) by its stored spans, or why it is unknown."""

from __future__ import annotations

from dataclasses import dataclass, field

from memories.items.models import MemoryItem
from memories.trust.provenance.models import ItemProvenance, ProvenanceStatus
from memories.trust.provenance.spans import DISTILLER, EXTERNAL, FIELDS

NOT_RECORDED = "none was recorded for this item (it was proposed before provenance was computed)."


@dataclass
class Segment:
    text: str
    source: str  # external, agent, task or distiller
    step: int | None = None


@dataclass
class ProvenanceView:
    known: bool
    reason: str = ""  # why it is unknown
    recorded: bool = True  # False: none was computed for the item
    computed_at: object = None
    fields: dict[str, list[Segment]] = field(default_factory=dict)
    copied_steps: list[int] = field(default_factory=list)  # the external steps the item copies, in order
    sources: set[str] = field(default_factory=set)  # the sources its text shows besides the distiller's


def _segments(text: str, spans: list[dict]) -> list[Segment] | None:
    """``text`` cut by ``spans`` (the gaps between them are the distiller's); None when they do not fit it."""
    out, at = [], 0
    for span in sorted(spans, key=lambda s: s["start"]):
        start, end = span.get("start"), span.get("end")
        if not isinstance(start, int) or not isinstance(end, int) or start < at or end > len(text) or end <= start:
            return None
        if start > at:
            out.append(Segment(text[at:start], DISTILLER))
        out.append(Segment(text[start:end], span.get("source") or DISTILLER, span.get("step")))
        at = end
    if at < len(text):
        out.append(Segment(text[at:], DISTILLER))
    return out


def item_provenance_view(*, item: MemoryItem) -> ProvenanceView:
    """What the item page shows of ``item``'s provenance."""
    row = ItemProvenance.objects.filter(item=item).first()
    if row is None:
        return ProvenanceView(known=False, reason=NOT_RECORDED, recorded=False)
    if row.status != ProvenanceStatus.KNOWN:
        return ProvenanceView(known=False, reason=row.reason, computed_at=row.computed_at)
    view = ProvenanceView(known=True, computed_at=row.computed_at)
    values = {"title": item.title or "", "description": item.description or "", "content": item.content or ""}
    for name in FIELDS:
        segments = _segments(values[name], [s for s in row.spans or [] if s.get("field") == name])
        if segments is None:  # the text changed since: show it plain rather than misplace a highlight
            return ProvenanceView(known=False, reason="the text changed since it was computed.")
        view.fields[name] = segments
        for segment in segments:
            if segment.source != DISTILLER:
                view.sources.add(segment.source)
            if segment.source == EXTERNAL and segment.step is not None and segment.step not in view.copied_steps:
                view.copied_steps.append(segment.step)
    return view
