"""What the service answers, as dataclasses. Built with ``from_dict``, which
ignores fields it does not know, so a newer service never breaks an older
client."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, TypeVar

T = TypeVar("T")

# Statuses a trajectory rests in: the pipeline will not move it without outside help.
# done: judged and distilled; needs_attention: an error a human must look at;
# awaiting_llm: no LLM endpoint is configured (it resumes when one is set).
SETTLED_STATUSES = frozenset({"done", "needs_attention", "awaiting_llm"})


def parse_datetime(value: Any) -> datetime | None:
    if not value or isinstance(value, datetime):
        return value or None
    text = str(value)
    if text.endswith("Z"):  # fromisoformat accepts "Z" only from Python 3.11
        text = text[:-1] + "+00:00"
    return datetime.fromisoformat(text)


def _build(cls: type[T], data: dict[str, Any], **overrides: Any) -> T:
    names = {f.name for f in dataclasses.fields(cls)}  # type: ignore[arg-type]
    values = {k: v for k, v in data.items() if k in names}
    values.update(overrides)
    return cls(**values)


@dataclass
class MemoryItem:
    """An approved memory item. On retrieval, ``score`` is what the order
    follows, and its parts say why it was served: ``similarity`` (cosine, to
    the query), ``utility`` (its measured effect on outcomes, shrunk toward 0
    while observations are few) and ``n`` (the judged retrievals behind it);
    ``score`` is the similarity unless the bank ranks by utility."""

    id: str
    title: str
    description: str
    content: str
    score: float | None = None
    similarity: float | None = None
    utility: float | None = None
    n: int | None = None
    origin: str | None = None
    approved_at: datetime | None = None

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> MemoryItem:
        return _build(cls, data, id=str(data["id"]), approved_at=parse_datetime(data.get("approved_at")))


@dataclass
class MemoryPage:
    """One page of the memories the bank serves (its production release); ``count`` is their total,
    ``release`` the release's number (None before the bank's first release)."""

    count: int
    items: list[MemoryItem]
    release: int | None = None

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> MemoryPage:
        return cls(
            count=int(data.get("count", 0)),
            items=[MemoryItem.from_dict(i) for i in data.get("items") or []],
            release=data.get("release"),
        )


@dataclass
class Retrieval:
    """The answer of ``retrieve``: put ``system_block`` in the system prompt and
    send ``retrieval_id`` back with the trajectory. ``run_id`` names the run it
    belongs to (its first retrieval's id): pass it to retrieve again at a later step.
    ``release`` is the number of the bank release it served (None before the bank's first)."""

    retrieval_id: str
    mode: str
    items: list[MemoryItem]
    system_block: str
    warnings: list[str] = field(default_factory=list)
    run_id: str = ""
    release: int | None = None

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Retrieval:
        return _build(
            cls,
            data,
            retrieval_id=str(data["retrieval_id"]),
            run_id=str(data.get("run_id") or data["retrieval_id"]),
            items=[MemoryItem.from_dict(i) for i in data.get("items") or []],
            warnings=list(data.get("warnings") or []),
        )


@dataclass
class Recorded:
    """The answer of ``record``: the trajectory's id and first status.
    ``duplicate`` is true when the ``external_id`` was already known (a retry)."""

    id: str
    status: str
    url: str
    duplicate: bool
    external_id: str | None = None

    @classmethod
    def from_dict(cls, data: dict[str, Any], external_id: str | None = None) -> Recorded:
        return _build(
            cls, data, id=str(data["id"]), duplicate=bool(data.get("duplicate", False)), external_id=external_id
        )


@dataclass
class BatchItemResult:
    index: int
    ok: bool
    id: str | None = None
    status: str | None = None
    duplicate: bool | None = None
    error: dict[str, Any] | None = None
    external_id: str | None = None

    @classmethod
    def from_dict(cls, data: dict[str, Any], external_id: str | None = None) -> BatchItemResult:
        return _build(
            cls,
            data,
            id=str(data["id"]) if data.get("id") else None,
            external_id=external_id or data.get("external_id"),
        )


@dataclass
class BatchResult:
    results: list[BatchItemResult]
    accepted: int
    failed: int

    @classmethod
    def from_dict(cls, data: dict[str, Any], external_ids: list[str | None] | None = None) -> BatchResult:
        ids = external_ids or []
        rows = [
            BatchItemResult.from_dict(r, ids[r["index"]] if 0 <= r.get("index", -1) < len(ids) else None)
            for r in data.get("results") or []
        ]
        return cls(results=rows, accepted=int(data.get("accepted", 0)), failed=int(data.get("failed", 0)))


@dataclass
class Judgment:
    source: str
    label: str
    rationale: str = ""
    model: str = ""
    prompt_version: str = ""
    created_at: datetime | None = None

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Judgment:
        return _build(cls, data, created_at=parse_datetime(data.get("created_at")))


@dataclass
class DerivedItem:
    """A memory item distilled from a trajectory, in any review status."""

    id: str
    title: str
    status: str
    origin: str

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> DerivedItem:
        return _build(cls, data, id=str(data["id"]))


@dataclass
class Trajectory:
    """A trajectory's state in the pipeline."""

    id: str
    status: str
    status_detail: str = ""
    verdict: str = ""
    judgments: list[Judgment] = field(default_factory=list)
    items: list[DerivedItem] = field(default_factory=list)
    created_at: datetime | None = None
    step_count: int = 0
    external_id: str | None = None
    group_id: str = ""
    retrieval_ids: list[str] = field(default_factory=list)  # its run's retrievals, first one first

    @property
    def settled(self) -> bool:
        """True in a status the pipeline rests in (see ``SETTLED_STATUSES``)."""
        return self.status in SETTLED_STATUSES

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Trajectory:
        return _build(
            cls,
            data,
            id=str(data["id"]),
            retrieval_ids=[str(r) for r in data.get("retrieval_ids") or []],
            judgments=[Judgment.from_dict(j) for j in data.get("judgments") or []],
            items=[DerivedItem.from_dict(i) for i in data.get("items") or []],
            created_at=parse_datetime(data.get("created_at")),
        )


@dataclass
class NearDuplicate:
    """An item suggested as a near-duplicate of a reviewed one, with its text to compare."""

    id: str
    title: str
    description: str
    content: str
    status: str
    similarity: float

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> NearDuplicate:
        return _build(cls, data, id=str(data["id"]))


@dataclass
class ReviewItem:
    """A memory item as the review API shows it (any status). The queue's rows
    leave ``sources``, ``near_duplicates`` and the other detail fields empty;
    ``review_item(id)`` fills them."""

    id: str
    title: str
    description: str
    content: str
    status: str
    origin: str = ""
    verdict_label: str = ""
    tags: list[str] = field(default_factory=list)
    near_duplicate_count: int = 0
    needs_review_reason: str = ""
    version: int = 0  # send it back as seen_version: a decision on an item changed since is refused (409)
    status_reason: str = ""
    prompt_version: str = ""
    model: str = ""
    cited_steps: list[dict[str, Any]] = field(default_factory=list)
    sources: list[str] = field(default_factory=list)
    sources_deleted: int = 0
    near_duplicates: list[NearDuplicate] = field(default_factory=list)
    created_at: datetime | None = None
    updated_at: datetime | None = None
    approved_at: datetime | None = None

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ReviewItem:
        return _build(
            cls,
            data,
            id=str(data["id"]),
            sources=[str(s) for s in data.get("sources") or []],
            near_duplicates=[NearDuplicate.from_dict(d) for d in data.get("near_duplicates") or []],
            created_at=parse_datetime(data.get("created_at")),
            updated_at=parse_datetime(data.get("updated_at")),
            approved_at=parse_datetime(data.get("approved_at")),
        )


@dataclass
class ReviewPage:
    """One page of the review queue; ``count`` is how many items match the filters."""

    count: int
    items: list[ReviewItem]

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ReviewPage:
        return cls(count=int(data.get("count", 0)), items=[ReviewItem.from_dict(i) for i in data.get("items") or []])


@dataclass
class TokenInfo:
    """The calling token: its bank, scopes and the bank's limits."""

    prefix: str
    name: str
    scopes: list[str]
    bank_id: str
    bank: str
    team: str
    retrieval_mode: str = ""
    top_k: int = 0
    rate_limit_per_minute: int = 0
    expires_at: datetime | None = None

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> TokenInfo:
        return _build(cls, data, bank_id=str(data["bank_id"]), expires_at=parse_datetime(data.get("expires_at")))


@dataclass
class ImpactArm:
    arm: str
    retrievals: int
    reported: int
    judged: int
    successes: int
    success_rate: float | None
    ci_low: float | None
    ci_high: float | None
    needed: int
    # Cost per arm (None when no judged run reported token usage; absent from older servers).
    mean_steps: float | None = None
    usage_runs: int = 0
    tokens_per_run: float | None = None
    memory_tokens_per_retrieval: float | None = None
    success_per_1k_tokens: float | None = None

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ImpactArm:
        return _build(cls, data)


@dataclass
class Impact:
    """Does the bank help? Treatment vs holdout success rates. ``raw`` is the
    whole answer, including per-item outcomes. ``items_pending``: a big
    window's items are being computed by a worker (``items`` is empty until
    then; ask again in a few seconds)."""

    days: int | None
    verdict: str
    verdict_text: str
    holdout_fraction: float
    treatment: ImpactArm
    holdout: ImpactArm
    difference: dict[str, float] | None
    items: list[dict[str, Any]]
    raw: dict[str, Any]
    items_pending: bool = False

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Impact:
        return _build(
            cls,
            data,
            treatment=ImpactArm.from_dict(data["treatment"]),
            holdout=ImpactArm.from_dict(data["holdout"]),
            items=list(data.get("items") or []),
            raw=data,
        )
