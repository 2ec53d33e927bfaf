"""The releases API's bodies and answers (memories.releases.api): a release with its labels and its
evaluations, the labels, and the moves' fields (an owner's override of the evaluation gate included)."""

from __future__ import annotations

from datetime import datetime
from uuid import UUID

from ninja import Field, Schema

from memories.releases.gate import evaluation_state
from memories.releases.models import NOTE_MAX, EvaluationGate, PublishMode, Release
from memories.serving.schemas import BodyIn


class ReleaseEvaluationOut(Schema):
    run: UUID = Field(..., description="The evaluation run's id (GET /api/v1/evaluations/{run}).")
    state: str = Field(..., description="under_way, passed or failed, under the bank's gate (off reads as not_worse).")
    versus_production: str = Field("", description="better, worse, no_difference or empty (not compared or not known).")
    versus_control: str = Field("", description="The same against the same-budget control.")
    summary: str = ""
    created_at: datetime
    finished_at: datetime | None = None


class ReleaseOut(Schema):
    id: UUID = Field(..., description="The release's id; paths take it or the number.")
    number: int = Field(..., examples=[7])
    note: str = Field("", examples=["Login lessons reviewed"])
    source: str = Field(..., description="automatic, published or imported.", examples=["published"])
    items: int = Field(..., description="Items in the release.", examples=[42])
    added: int
    changed: int
    removed: int
    created_at: datetime
    labels: list[str] = Field(default_factory=list, description="production and/or canary.", examples=[["canary"]])
    candidate: bool = Field(False, description="Never served yet (neither production nor canary, ever).")
    evaluations: list[ReleaseEvaluationOut] = Field(default_factory=list, description="Newest first.")


class ReleasesOut(Schema):
    mode: str = Field(..., description="automatic (every change published at once) or manual.")
    production: int | None = Field(
        None, description="The release served to every retrieval not held out or in the canary."
    )
    canary: int | None = None
    canary_fraction: float = Field(0, description="The canary's share of all retrievals.")
    auto_rollback: bool = False
    evaluation_gate: str = Field("off", description="off, not_worse or beats_control (see docs/releases.md).")
    releases: list[ReleaseOut]


class ReleaseMoveOut(Schema):
    message: str
    noop: bool = Field(False, description="True when nothing changed (nothing to publish, already production…).")
    production: int | None = None
    canary: int | None = None
    canary_fraction: float = 0
    release: int | None = Field(None, description="The release published or imported, if any.")


class OverrideIn(BodyIn):
    override: bool = Field(False, description="Owners: go past the evaluation gate (audited, with the reason).")
    override_reason: str = Field("", max_length=NOTE_MAX, description="Why; required with override.")


class PublishIn(OverrideIn):
    note: str = Field("", max_length=NOTE_MAX, examples=["Login lessons reviewed"])
    canary_fraction: float | None = Field(
        None, description="Publish as the canary for this share of all retrievals (0.01–0.99) instead of production."
    )
    candidate: bool = Field(False, description="Write the release without serving it (to evaluate it first).")


class CanaryIn(OverrideIn):
    fraction: float = Field(
        ..., description="Share of all retrievals served the canary (with the holdout ≤ 1).", examples=[0.1]
    )


class ReleaseSettingsIn(BodyIn):
    mode: PublishMode | None = None
    auto_rollback: bool | None = Field(None, description="Roll a significantly worse canary back on its own.")
    evaluation_gate: EvaluationGate | None = Field(
        None, description="Require a passing evaluation before a release reaches agents (admins' tokens)."
    )


class MoveIn(BodyIn):
    """A move that takes no fields: an empty body (or none); any field is a 422 naming it."""


def release_labels(releasing, release: Release) -> list[str]:
    return [
        name
        for name, pk in (("production", releasing.production_id), ("canary", releasing.canary_id))
        if pk == release.pk
    ]


def release_out(releasing, release: Release) -> ReleaseOut:
    gate = releasing.evaluation_gate
    evaluations = [
        ReleaseEvaluationOut(
            run=e.run,
            state=evaluation_state(e, gate),
            versus_production=e.versus_production,
            versus_control=e.versus_control,
            summary=e.summary,
            created_at=e.created_at,
            finished_at=e.finished_at,
        )
        for e in release.evaluations.all()
    ]
    return ReleaseOut(
        id=release.public_id,
        number=release.number,
        note=release.note,
        source=release.source,
        items=release.item_count,
        added=release.added,
        changed=release.changed,
        removed=release.removed,
        created_at=release.created_at,
        labels=release_labels(releasing, release),
        candidate=release.first_served_at is None,
        evaluations=evaluations,
    )
