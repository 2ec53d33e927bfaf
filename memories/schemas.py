"""Request and response shapes of the memories API."""

from __future__ import annotations

from datetime import datetime
from uuid import UUID

from ninja import Field, Schema

from memories.selectors import MAX_K
from reasoningbank_site.text import CleanStr


class RetrieveIn(Schema):
    query: CleanStr = Field(
        ...,
        min_length=1,
        max_length=8000,
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
    score: float = Field(..., description="Cosine similarity (1 = identical).", examples=[0.71])


class RetrieveOut(Schema):
    retrieval_id: UUID = Field(
        ...,
        description="Send it back as `retrieval_id` with the trajectory, so outcomes can be tied to what was served.",
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


class ApprovedMemoryOut(MemoryOut):
    origin: str = Field(..., examples=["failure"])
    approved_at: datetime | None = Field(None, examples=["2026-11-21T20:15:00Z"])


class MemoryListOut(Schema):
    count: int = Field(..., description="Approved items in the bank.", examples=[42])
    items: list[ApprovedMemoryOut]
