"""Request and response shapes of the memories API."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Annotated, Any, Literal
from uuid import UUID

from ninja import Field, Schema
from pydantic import AfterValidator, BaseModel, ConfigDict, StringConstraints, field_validator, model_validator

from memories.items.models import normalize_tags
from memories.serving.search import MAX_K
from memories.trust.schemas import CorroborationOut, RiskOut
from reasoningbank_site.text import CleanStr, scrub_text
from reasoningbank_site.values import Moment

FILTER_VALUES_MAX = 50  # tags or agents listed in one filter
FILTER_METADATA_KEYS_MAX = 20
FILTER_METADATA_BYTES_MAX = 4096


def _one_tag(value: str) -> str:
    tags = normalize_tags([value])
    if not tags:
        raise ValueError("a tag cannot be empty")
    return tags[0]


FilterTag = Annotated[str, AfterValidator(_one_tag)]
AgentName = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=200)]


class BodyIn(BaseModel):
    """A JSON request body: an unknown field is a 422 naming it (``extra_forbidden``), never silently
    dropped. A plain pydantic model rather than a ninja Schema, like trajectories.ingest.schemas.TrajectoryIn:
    a Schema that forbids extras validates every body twice."""

    model_config = ConfigDict(extra="forbid")


def _known_keys(data: Any, allowed: tuple[str, ...], what: str) -> Any:
    if isinstance(data, dict):
        unknown = [str(key) for key in data if key not in allowed]
        if unknown:
            raise ValueError(f"unknown {what} {', '.join(repr(k) for k in unknown)}; use {' or '.join(allowed)}")
    return data


class TagFilterIn(BaseModel):
    """Items carrying any of ``any`` and all of ``all`` (both may be given)."""

    model_config = ConfigDict(extra="forbid")

    any: list[FilterTag] = Field(default_factory=list, max_length=FILTER_VALUES_MAX, examples=[["checkout", "auth"]])
    all: list[FilterTag] = Field(default_factory=list, max_length=FILTER_VALUES_MAX, examples=[["web"]])

    @model_validator(mode="before")
    @classmethod
    def _keys(cls, data: Any) -> Any:
        return _known_keys(data, ("any", "all"), "tags filter key")

    @model_validator(mode="after")
    def _not_empty(self) -> TagFilterIn:
        if not self.any and not self.all:
            raise ValueError("give a non-empty 'any' or 'all' list of tags")
        return self


class AgentFilterIn(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    in_: list[AgentName] = Field(
        ..., alias="in", min_length=1, max_length=FILTER_VALUES_MAX, examples=[["shop-bot/1.3", "shop-bot/1.4"]]
    )

    @model_validator(mode="before")
    @classmethod
    def _keys(cls, data: Any) -> Any:
        return _known_keys(data, ("in",), "agent filter key")


class RetrieveFiltersIn(BaseModel):
    """Narrow what may be served. ``tags``: reviewers' tags of the item.
    ``agent`` / ``metadata``: the ``agent`` and ``metadata`` of the
    trajectories the item was distilled from (items written by hand or
    imported have none, so these two leave them out). All given parts must
    match; they are applied inside the vector search, so k items are still
    served when only a few match."""

    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={
            "examples": [
                {"tags": {"any": ["checkout"]}},
                {"agent": "shop-bot/1.3", "metadata": {"env": "prod"}},
                {"tags": {"all": ["web", "auth"]}, "agent": {"in": ["shop-bot/1.3", "shop-bot/1.4"]}},
            ]
        },
    )

    tags: TagFilterIn | None = Field(None, description='{"any": [...]} and/or {"all": [...]} of lower-case tags.')
    agent: AgentName | AgentFilterIn | None = Field(
        None, description='One agent name, or {"in": [...]}: items learnt from a trajectory of that agent.'
    )
    metadata: dict[str, Any] = Field(
        default_factory=dict,
        max_length=FILTER_METADATA_KEYS_MAX,
        description=(
            "JSON containment: items learnt from a trajectory whose metadata has every key with that value "
            "(nested objects match partially)."
        ),
        examples=[{"env": "prod", "site": {"name": "shop"}}],
    )
    tier: Literal["agent", "judge", "human"] | None = Field(
        None,
        description="Only items whose source verdicts all reach this trust tier (agent < judge < human: the "
        "agent's own report ranks lowest); items written by hand or imported count as human.",
    )

    @model_validator(mode="before")
    @classmethod
    def _keys(cls, data: Any) -> Any:
        return scrub_text(_known_keys(data, ("tags", "agent", "metadata", "tier"), "filter"))

    @field_validator("metadata")
    @classmethod
    def _metadata_size(cls, value: dict[str, Any]) -> dict[str, Any]:
        try:
            size = len(json.dumps(value, ensure_ascii=False, allow_nan=False).encode("utf-8"))
        except ValueError:
            raise ValueError("contains NaN or Infinity, which JSON cannot store") from None
        except RecursionError:
            raise ValueError("is nested too deeply") from None
        if size > FILTER_METADATA_BYTES_MAX:
            raise ValueError(f"is {size} bytes serialized; the limit is {FILTER_METADATA_BYTES_MAX} bytes")
        return value


QUERY_MAX_LENGTH = 8000


class RetrieveIn(BodyIn):
    query: CleanStr = Field(
        ...,
        min_length=1,
        max_length=QUERY_MAX_LENGTH,
        description="The task the agent is about to attempt, in its own words.",
        # Not only whitespace (Python's notion, which also counts U+001C–U+001F and U+0085).
        json_schema_extra={"pattern": "[^\\s\\u001c-\\u001f\\u0085]"},
        examples=["Sign in to the admin dashboard and export last month's orders as CSV."],
    )
    k: int | None = Field(
        None,
        ge=1,
        le=MAX_K,
        description="How many items (items mode) or past tasks (experiences mode) to use. Default: the bank's top-k.",
        examples=[3],
    )
    task_id: CleanStr = Field(
        "",
        max_length=200,
        description="Your id for this task; items learnt from the same task id are not served (leave-one-task-out).",
        examples=["webarena-shopping-0412"],
    )
    filters: RetrieveFiltersIn | None = Field(
        None,
        description=(
            "Serve only items matching these filters: tags (any/all), the source trajectories' agent "
            "(a name or {in: [...]}) and metadata (JSON containment). Unknown keys are a 422."
        ),
        examples=[{"tags": {"any": ["checkout"]}, "agent": "shop-bot/1.3", "metadata": {"env": "prod"}}],
    )
    run_id: UUID | None = Field(
        None,
        description=(
            "Retrieve again at a later step of a run: the `run_id` (or any `retrieval_id`) an earlier retrieval "
            "of the run returned. The retrieval takes the run's arm (holdout or served), and items already "
            "served in the run are not served again unless `include_served`. Unknown or another bank's: 404."
        ),
        examples=["9b2e6f70-1d3a-4a55-8c1e-0f7b2d9e4c21"],
    )
    include_served: bool = Field(
        False, description="With `run_id`: serve items again that were already served earlier in the run."
    )


class MemoryOut(Schema):
    id: UUID = Field(..., examples=["3f0c9a4e-5b8e-4c1e-9f61-2f4d1c8b7a10"])
    title: str = Field(..., examples=["Find the sign-in form before searching for account data"])
    description: str = Field(..., examples=["Use when a task needs data that only a logged-in user can see."])
    content: str = Field(
        ...,
        examples=[
            "Look for a 'Sign in' or account link first; pages reached anonymously often hide the data the task asks for."
        ],
    )


class ScoredMemoryOut(MemoryOut):
    score: float = Field(
        ...,
        description="What the order follows: the similarity, plus utility_weight × utility when the bank ranks "
        "by utility.",
        examples=[0.71],
    )
    similarity: float = Field(..., description="Cosine similarity to the query (1 = identical).", examples=[0.71])
    utility: float = Field(
        ...,
        description="Measured effect on success, shrunk toward 0 while n is small (docs/retrieval.md).",
        examples=[0.0],
    )
    n: int = Field(..., description="Judged retrievals behind the utility.", examples=[0])


class RetrieveOut(Schema):
    retrieval_id: UUID = Field(
        ...,
        description="Send it back as `retrieval_id` with the trajectory, so outcomes can be tied to what was served.",
        examples=["9b2e6f70-1d3a-4a55-8c1e-0f7b2d9e4c21"],
    )
    run_id: UUID = Field(
        ...,
        description=(
            "The run this retrieval belongs to: the retrieval_id of the run's first retrieval (this one's own, "
            "for a first retrieval). Send it as `run_id` to retrieve again at a later step."
        ),
        examples=["9b2e6f70-1d3a-4a55-8c1e-0f7b2d9e4c21"],
    )
    mode: str = Field(..., description="items or experiences (a bank setting).", examples=["items"])
    items: list[ScoredMemoryOut]
    system_block: str = Field(
        ...,
        description="Ready to paste into the agent's system prompt; empty when nothing matched.",
        examples=["Below are lessons distilled from earlier attempts…\n\n## Find the sign-in form…\n…"],
    )
    warnings: list[str] = Field(
        default_factory=list,
        examples=[["2 approved items are still being embedded and could not be searched."]],
    )
    release: int | None = Field(
        None,
        description="The number of the bank's release this retrieval served (null: the bank has no release yet).",
        examples=[7],
    )


class ApprovedMemoryOut(MemoryOut):
    origin: str = Field(..., examples=["failure"])
    approved_at: datetime | None = Field(None, examples=["2026-11-21T20:15:00Z"])


class ServedMemoryOut(ApprovedMemoryOut):
    release: int | None = Field(
        None, description="The bank's production release that serves it (null before its first release).", examples=[10]
    )


class MemoryListOut(Schema):
    count: int = Field(..., description="Items the bank serves (its production release).", examples=[42])
    release: int | None = Field(
        None, description="The production release listed (null before the bank's first release).", examples=[10]
    )
    items: list[ApprovedMemoryOut]


# --- the review API (/api/v1/review/…, scope review) ------------------------------------------------
# Each request schema's fields are the keyword options of the service it feeds (the endpoint passes
# ``model_dump()``), so a new service option is one field here.


class ReviewItemOut(Schema):
    id: UUID = Field(..., examples=["3f0c9a4e-5b8e-4c1e-9f61-2f4d1c8b7a10"])
    title: str
    description: str
    content: str
    status: str = Field(..., examples=["proposed"])
    origin: str = Field(..., examples=["failure"])
    verdict_label: str = Field(..., description="The verdict it was distilled under (empty: not distilled).")
    tags: list[str]
    near_duplicate_count: int = Field(..., description="Near-duplicates suggested when it was proposed.")
    risk_count: int = Field(0, description="Risk findings nobody has confirmed yet.")
    needs_review_reason: str = ""
    valid_until: datetime | None = Field(None, description="Not served after this moment (null: no expiry).")
    expired: bool = Field(False, description="Past its validity: not served, listed for re-review.")
    stale_reason: str = Field("", description="Why it is stale (empty: it is not): a newer environment value.")
    retirement_reason: str = Field("", description="Why Impact proposes retiring it (empty: it does not).")
    suspended: bool = Field(False, description="Not served until a reviewer decides (the bank's choice).")
    created_at: datetime
    updated_at: datetime
    version: int = Field(
        ...,
        description="Its version (every change adds one). Send it back as seen_version with a decision "
        "to have it refused (409 stale_version) if someone else changed the item since.",
    )


class ReviewListOut(Schema):
    count: int = Field(..., description="Items matching the filters.", examples=[12])
    items: list[ReviewItemOut]


class NearDuplicateOut(Schema):
    id: UUID
    title: str
    description: str
    content: str
    status: str
    similarity: float = Field(..., examples=[0.93])


class RepeatOut(Schema):
    title: str
    content: str
    similarity: float | None
    trajectories: list[UUID]
    created_at: datetime


class ReviewItemDetailOut(ReviewItemOut):
    status_reason: str = Field("", description="Why it was rejected or superseded.")
    approved_at: datetime | None = None
    prompt_version: str = ""
    model: str = ""
    cited_steps: list[dict[str, Any]] = Field(default_factory=list, examples=[[{"trajectory": "…", "step": 3}]])
    sources: list[UUID] = Field(default_factory=list, description="Trajectories it was distilled from.")
    sources_deleted: int = Field(0, description="Source trajectories deleted since.")
    near_duplicates: list[NearDuplicateOut] = Field(default_factory=list)
    environment: dict[str, Any] = Field(default_factory=dict, examples=[{"agent": "web-agent", "site_version": "3"}])
    stale_environment: dict[str, Any] = Field(default_factory=dict, description="The newer values seen.")
    retirement_evidence: dict[str, Any] = Field(default_factory=dict)
    archived_as_wrong: bool = False
    state: str = Field("", description="What leads on its page (docs/review-ui.md): suspended, merged, stale, …")
    state_reason: str = Field("", description="Why it is in that state (empty: nothing to add).")
    superseded_by: UUID | None = None  # the item it was merged into or replaced by
    repeats: list[RepeatOut] = Field(default_factory=list, description="Times it was distilled again after a refusal.")
    risks: list[RiskOut] = Field(default_factory=list, description="Risk findings (empty: none).")
    verdict_tier: str = Field(
        "", description="The weakest trust tier of its source verdicts: agent, judge or human (empty: none)."
    )
    corroboration: CorroborationOut | None = Field(None, description="Null: the bank does not require it.")


SEEN_VERSION_HELP = (
    "The item's version when you read it: a decision on an item changed since answers 409 stale_version."
)


class ApproveIn(BodyIn):
    """Approve (an empty body or ``{}`` is fine)."""

    seen_version: int | None = Field(None, description=SEEN_VERSION_HELP)
    confirm_duplicate: bool = Field(
        False,
        description="Approve even when an approved item of the bank is at or above its duplicate threshold "
        "(without it that answers 409 duplicate_needs_confirmation).",
    )
    confirm_risks: bool = Field(
        False,
        description="Approve an item with unconfirmed risk findings, recording you as having confirmed them "
        "(without it that answers 409 risks_need_confirmation).",
    )


class RejectIn(BodyIn):
    seen_version: int | None = Field(None, description=SEEN_VERSION_HELP)
    reason: CleanStr = Field(
        ..., max_length=2000, description="Why it should not be served (required).", examples=["Too site-specific."]
    )

    @field_validator("reason")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("a rejection needs a reason")
        return value.strip()


class EditIn(BodyIn):
    """Fields left out (or null) stay as they are."""

    title: CleanStr | None = Field(None, examples=["Sign in before looking for order data"])
    description: CleanStr | None = None
    content: CleanStr | None = None
    tags: list[CleanStr] | None = Field(None, max_length=50, examples=[["auth", "web"]])
    note: CleanStr = Field("", max_length=2000, description="Why it was edited (kept in its history).")
    seen_version: int | None = Field(None, description=SEEN_VERSION_HELP)
    valid_until: Moment | None = Field(
        None,
        description="Not served after this moment (in the future, with a time zone); an explicit null removes it.",
        examples=["2027-06-30T00:00:00Z"],
    )
    confirm_current: bool = Field(False, description="A stale item still holds: adopt the newer environment.")
