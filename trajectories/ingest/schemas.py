"""Input and output shapes of the trajectory API. Validation here is about
types and sizes only; turning steps/messages into normalized steps is
trajectories.ingest, called by the service.

Inputs are plain pydantic models, not ninja Schemas: a Schema with
extra="forbid" validates twice (once on the dict, once through its ORM
getter), which doubles the cost of a 5 MB body and hides what a "before"
validator returns."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Annotated, Any, Literal
from uuid import UUID

from ninja import Schema
from pydantic import BaseModel, ConfigDict, Field, StringConstraints, field_validator, model_validator

from reasoningbank_site.text import json_depth, scrub_text  # the one text-cleaning mechanism
from trajectories.ingest.usage import usage_read

MAX_TASK_CHARS = 20_000
MAX_FINAL_ANSWER_CHARS = 200_000
MAX_ID_CHARS = 200
MAX_METADATA_BYTES = 64 * 1024
MAX_METADATA_DEPTH = 32

Identifier = Annotated[str, StringConstraints(strip_whitespace=True, max_length=MAX_ID_CHARS)]


class TrajectoryIn(BaseModel):
    """One finished agent run. Send exactly one of ``steps`` (native) or
    ``messages`` (OpenAI or Anthropic, detected automatically)."""

    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={
            "oneOf": [{"required": ["steps"]}, {"required": ["messages"]}],
            "examples": [
                {
                    "task": "Find the cheapest direct flight from Lyon to Porto in May.",
                    "steps": [
                        {
                            "thought": "Search the flight tool first.",
                            "tool": "search_flights",
                            "arguments": {"from": "LYS", "to": "OPO", "month": "2026-05"},
                            "observation": "3 results; cheapest 48 EUR on May 12",
                        },
                    ],
                    "final_answer": "May 12, 48 EUR",
                    "outcome": "success",
                    "external_id": "run-2026-05-01-0001",
                },
                {
                    "task": "What's the weather in Paris?",
                    "messages": [
                        {"role": "user", "content": "What's the weather in Paris?"},
                        {
                            "role": "assistant",
                            "content": None,
                            "tool_calls": [
                                {
                                    "id": "call_1",
                                    "type": "function",
                                    "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
                                }
                            ],
                        },
                        {"role": "tool", "tool_call_id": "call_1", "content": "18°C, cloudy"},
                        {"role": "assistant", "content": "18°C and cloudy."},
                    ],
                    "final_answer": "18°C and cloudy.",
                },
            ],
        },
    )

    task: Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=MAX_TASK_CHARS)] = Field(
        description="What the agent was asked to do (≤ 20,000 characters)."
    )
    steps: list[dict[str, Any]] | None = Field(
        None,
        description="Native steps: {thought, action, observation, tool?, arguments?, error?, refinement?} or {kind, content}.",
    )
    messages: list[dict[str, Any]] | None = Field(
        None,
        description=(
            "The conversation as the agent exchanged it, format detected automatically: OpenAI chat-completions "
            "messages, Anthropic messages, OpenAI Responses items (the Agents SDK's result.to_input_list()) or "
            "LangChain messages (messages_to_dict, model_dump or dumpd). Without final_answer, the agent's last "
            "text reply is taken as the final answer."
        ),
    )
    system: str | list[Any] | None = Field(
        None, description="Anthropic's top-level system prompt, sent apart from messages."
    )
    final_answer: Annotated[str, Field(max_length=MAX_FINAL_ANSWER_CHARS)] = ""
    outcome: Literal["success", "failure"] | None = Field(None, description="The agent's own verdict, if it has one.")
    reward: Annotated[float, Field(strict=True, allow_inf_nan=False)] | None = Field(
        None, description="A verifier's reward; success iff ≥ the bank's reward threshold (when the bank trusts it)."
    )
    external_id: Identifier | None = Field(
        None, description="Your id for this run: a repeat returns the same trajectory."
    )
    retrieval_id: UUID | None = Field(None, description="The retrieval_id that /retrieve returned for this run.")
    group_id: Identifier = Field("", description="MaTTS parallel group: k rollouts of one task share it.")
    group_size: Annotated[int, Field(strict=True, ge=1, le=1000)] | None = None
    task_id: Identifier = ""
    agent: Identifier = ""
    metadata: dict[str, Any] = Field(default_factory=dict, description="Free JSON (≤ 64 KiB serialized).")
    usage: dict[str, Any] | None = Field(
        None,
        description=(
            'The run\'s token usage, all LLM calls together: {"prompt_tokens": int, "completion_tokens": int} '
            "(or input_tokens / output_tokens; Anthropic's cache_creation_input_tokens and cache_read_input_tokens "
            "are added to the prompt). Whole numbers from 0 to 1,000,000,000. Without it, the usage objects the "
            "messages carry (Anthropic Message or OpenAI response 'usage', LangChain 'usage_metadata') are summed."
        ),
        examples=[{"prompt_tokens": 5200, "completion_tokens": 640}],
    )

    @model_validator(mode="before")
    @classmethod
    def _scrub(cls, data: Any) -> Any:
        return scrub_text(data) if isinstance(data, dict) else data

    @field_validator("external_id")
    @classmethod
    def _empty_external_id_is_none(cls, value: str | None) -> str | None:
        return value or None

    @field_validator("metadata")
    @classmethod
    def _metadata_size(cls, value: dict[str, Any]) -> dict[str, Any]:
        if json_depth(value, MAX_METADATA_DEPTH) > MAX_METADATA_DEPTH:
            raise ValueError(f"is nested deeper than {MAX_METADATA_DEPTH} levels")
        try:
            size = len(json.dumps(value, ensure_ascii=False, allow_nan=False).encode("utf-8"))
        except ValueError:
            raise ValueError("contains NaN or Infinity, which JSON cannot store") from None
        if size > MAX_METADATA_BYTES:
            raise ValueError(f"is {size} bytes serialized; the limit is {MAX_METADATA_BYTES} bytes (64 KiB)")
        return value

    @field_validator("usage", mode="before")
    @classmethod
    def _usage_counts(cls, value: Any) -> dict[str, int | None] | None:
        return None if value is None else usage_read(value)

    @model_validator(mode="after")
    def _one_of_steps_or_messages(self) -> TrajectoryIn:
        if self.steps is None and self.messages is None:
            raise ValueError("send 'steps' (native) or 'messages' (OpenAI/Anthropic); neither was given")
        if self.steps is not None and self.messages is not None:
            raise ValueError("send either 'steps' or 'messages', not both")
        if self.system is not None and self.messages is None:
            raise ValueError("'system' is only used together with 'messages'")
        return self


class TrajectoryAcceptedOut(Schema):
    id: UUID
    status: str
    url: str
    duplicate: bool = False


class BatchIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    # Items stay untyped here so that one malformed item fails alone.
    trajectories: list[Any] = Field(
        description="Trajectories, each shaped like the body of POST /trajectories.",
        json_schema_extra={"minItems": 1},
    )


class ItemErrorOut(Schema):
    detail: str
    code: str
    errors: list[dict[str, Any]] | None = None


class BatchResultOut(Schema):
    index: int
    ok: bool
    id: UUID | None = None
    status: str | None = None
    duplicate: bool | None = None
    error: ItemErrorOut | None = None


class BatchOut(Schema):
    results: list[BatchResultOut]
    accepted: int
    failed: int


class JudgmentOut(Schema):
    source: str
    label: str
    rationale: str
    model: str
    prompt_version: str
    created_at: datetime


class DerivedItemOut(Schema):
    id: UUID
    title: str
    status: str
    origin: str


class TrajectoryOut(Schema):
    id: UUID
    status: str
    status_detail: str
    verdict: str
    judgments: list[JudgmentOut]
    items: list[DerivedItemOut]
    supported_items: list[DerivedItemOut] = Field(
        default_factory=list,
        description="Items the bank already held that this trajectory's distillation found again: recorded as "
        "supporting evidence on them (at or above the bank's duplicate threshold) instead of new proposals.",
    )
    created_at: datetime
    step_count: int
    external_id: str | None
    group_id: str
    steps_purged_at: datetime | None = Field(
        None,
        description="When the bank's retention deleted the steps and final answer: the time of the retention run "
        "that purged them (null: kept).",
    )
    retrieval_ids: list[UUID] = Field(
        default_factory=list,
        description="The retrievals of this trajectory's run, first one first: the retrieval_id it was sent with "
        "and every later step retrieved with that run_id ([] when it was sent without a retrieval_id).",
    )


class TrajectoryDeletedOut(Schema):
    id: UUID
    external_id: str | None
    deleted: bool = True
    items_kept: int = Field(
        ..., description="Memory items distilled from it; they stay, marked as from a deleted trajectory."
    )


# --- GET /api/v1/impact ---------------------------------------------------------------------------


class ImpactArmOut(Schema):
    arm: str = Field(..., examples=["treatment"])
    retrievals: int = Field(..., description="Agent retrievals in this arm within the window and the analysed period.")
    triggered: int = Field(
        ..., description="Of those, retrievals that served (or would have served) at least one item."
    )
    units: int = Field(..., description="Triggered retrievals with at least one judged trajectory: the unit compared.")
    reported: int = Field(..., description="Trajectories sent back with the retrieval_id of a triggered retrieval.")
    judged: int = Field(..., description="Of those, trajectories with an effective verdict.")
    successes: int
    success_rate: float | None = Field(
        ...,
        description="Mean over judged retrievals of the share of their judged trajectories that succeeded "
        "(successes / judged when each retrieval has one trajectory); null when nothing is judged.",
        examples=[0.7],
    )
    ci_low: float | None = Field(..., description="Wilson 95% interval (on the effective sample size), lower bound.")
    ci_high: float | None = Field(..., description="Wilson 95% interval, upper bound.")
    report_rate: float | None = Field(..., description="units / triggered: the share that came back judged.")
    mean_steps: float | None = Field(..., description="Mean step count of the judged trajectories.")
    needed: int = Field(..., description="Judged retrievals still needed before a verdict.")
    usage_runs: int = Field(
        0, description="Judged trajectories (of triggered retrievals) whose agent reported token usage."
    )
    tokens_per_run: float | None = Field(
        None, description="Mean prompt + completion tokens of those runs; null when no run reported usage."
    )
    prompt_tokens_per_run: float | None = None
    completion_tokens_per_run: float | None = None
    memory_tokens_per_retrieval: float | None = Field(
        None,
        description="Estimated tokens of the memory block served, per retrieval (every step's retrieval "
        "counts; the holdout's are 0); null without retrievals.",
    )
    success_per_1k_tokens: float | None = Field(
        None, description="Successes per 1,000 tokens over the runs that reported usage; null when none did."
    )


class ImpactDifferenceOut(Schema):
    estimate: float = Field(..., description="treatment − holdout success rate (0.4 = 40 points).", examples=[0.4])
    ci_low: float = Field(..., description="Newcombe hybrid score 95% interval: valid for one look only.")
    ci_high: float
    cs_low: float = Field(..., description="Always-valid 95% confidence sequence (the verdict follows it).")
    cs_high: float
    always_valid_p: float = Field(..., description="The mixture SPRT's always-valid p-value for no difference.")


class ImpactGuardrailOut(Schema):
    name: Literal["sample_ratio", "reporting"]
    ok: bool = Field(..., description="False withholds the verdict.")
    p_value: float | None
    detail: str


class ImpactPeriodOut(Schema):
    fraction: float | None = Field(
        ..., description="Holdout fraction of the compared retrievals; null: recorded before fractions were."
    )
    after: datetime | None = Field(..., description="Compared retrievals were made after this (the last change).")
    excluded: int = Field(..., description="Retrievals of the window from other fraction periods, not compared.")


class ImpactPowerOut(Schema):
    mde: float | None = Field(..., description="Smallest lift the verdict detects with 80% probability now.")
    more_needed_5: int | None = Field(..., description="About how many more judged trajectories for a 5-point lift.")
    more_needed_10: int | None = Field(..., description="... for a 10-point lift.")


class ImpactItemOut(Schema):
    id: UUID
    title: str
    status: str = Field(..., description="The item's status; empty when the item no longer exists.")
    served_judged: int = Field(..., description="Judged trajectories whose retrieval served this item.")
    served_successes: int
    served_retrievals: int = Field(..., description="Judged retrievals that served this item (the unit).")
    served_success_rate: float | None = Field(..., description="Per retrieval, as the arms' success_rate.")
    withheld_judged: int = Field(
        ..., description="Judged trajectories whose retrieval would have served it but was held out."
    )
    withheld_successes: int
    withheld_retrievals: int
    withheld_success_rate: float | None
    difference: float | None = Field(..., description="served − withheld success rate.")
    ci_low: float | None = Field(..., description="Newcombe 95% interval of the difference, for this item alone.")
    ci_high: float | None
    p_value: float | None = Field(..., description="Score test; null until 10 judged retrievals on each side.")
    shrunk: float | None = Field(..., description="Empirical-Bayes estimate of the difference, for ranking.")
    served_count: int = Field(..., description="Times the item was served to agents, all time.")
    may_hurt: bool = Field(
        ..., description="Significantly below withheld after Benjamini–Hochberg across items (10% FDR)."
    )
    may_help: bool = Field(..., description="Significantly above withheld after Benjamini–Hochberg.")


class ImpactOut(Schema):
    days: int | None = Field(..., description="The window in days back from now; null = all time.")
    since: datetime | None
    holdout_fraction: float
    holdout_configured: bool
    verdict: Literal["no_holdout", "not_enough_data", "withheld", "helps", "hurts", "no_difference"]
    verdict_text: str
    method: str
    min_per_arm: int = Field(..., description="Judged retrievals each arm needs before a verdict.")
    period: ImpactPeriodOut
    treatment: ImpactArmOut
    holdout: ImpactArmOut
    difference: ImpactDifferenceOut | None = Field(
        ..., description="Null without a holdout or while an arm has nothing judged."
    )
    guardrails: list[ImpactGuardrailOut] = Field(..., description="Checks that withhold the verdict when one fails.")
    power: ImpactPowerOut
    item_baseline: float = Field(
        ...,
        description="The holdout's success rate (0.5 while it is small); items are compared with their own withheld retrievals.",
    )
    item_comparison: Literal["randomised", "holdout_arm"] | None = Field(
        ...,
        description="How items are compared: `randomised` — served vs left out on its own (per-item randomisation, "
        "the item's own effect); `holdout_arm` — served vs the holdout arm (the set served with the item). Null "
        "while `items_pending`.",
    )
    items_as_of: datetime | None = Field(
        ...,
        description="Null: the items are current. A big bank's per-item table is kept between requests (the Impact "
        "page's; exact while no retrieval of the bank changed since) and recomputed by a worker every minute while "
        "it changes; when it changed since, the items are those computed at this moment (over 5 minutes ago, a "
        "recompute is queued).",
    )
    items_pending: bool = Field(
        ...,
        description="True: this big window's per-item table is not computed yet; a worker computes it (queued by "
        "this call, never computed on it) and `items` is empty until then: ask again in a few seconds. False: "
        "`items` are the window's.",
    )
    items: list[ImpactItemOut] = Field(..., description="Top 20 items by judged served trajectories.")
