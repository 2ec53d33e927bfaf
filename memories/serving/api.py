"""Agent API for memories: retrieve before a task, browse what is approved.
Thin: parse → selector/service → shape."""

from __future__ import annotations

from typing import Literal
from uuid import UUID

from ninja import Field, Query, Router, Schema

from accounts.tokens.auth import TokenAuth, api_responses
from memories.embedding.model import EmbeddingModelError
from memories.items.models import MemoryItem
from memories.serving import NO_FILTERS, RetrievalFilters, skill_files
from memories.serving.lists import served_item_get, served_items
from memories.serving.retrieval import retrieval_perform
from memories.serving.schemas import (
    MemoryListOut,
    RetrieveFiltersIn,
    RetrieveIn,
    RetrieveOut,
    ScoredMemoryOut,
    ServedMemoryOut,
)
from memories.serving.skills import bank_lessons
from memories.trust.models import TIER_BY_NAME
from reasoningbank_site.errors import Invalid, NotFound, Unavailable
from reasoningbank_site.text import counted

router = Router(tags=["memories"])

MAX_PAGE = 100
MAX_OFFSET = 1_000_000_000  # keeps OFFSET far inside PostgreSQL's bigint: a larger one is a 422, not a database error


class PageIn(Schema):
    limit: int = Field(20, ge=1, le=MAX_PAGE, description="Items per page (1–100).")
    offset: int = Field(0, ge=0, le=MAX_OFFSET, description="Items to skip.")


def _filters(payload: RetrieveFiltersIn | None) -> RetrievalFilters:
    if payload is None:
        return NO_FILTERS
    agent = payload.agent
    return RetrievalFilters(
        tags_any=tuple(payload.tags.any) if payload.tags else (),
        tags_all=tuple(payload.tags.all) if payload.tags else (),
        agents=(agent,) if isinstance(agent, str) else tuple(agent.in_) if agent else (),
        metadata=payload.metadata,
        min_tier=TIER_BY_NAME.get(payload.tier or "", 0),
    )


def _memory_out(item: MemoryItem) -> dict:
    return {
        "id": item.public_id,
        "title": item.title,
        "description": item.description,
        "content": item.content,
        "origin": item.origin,
        "approved_at": item.approved_at,
    }


@router.post(
    "/retrieve",
    response=api_responses({200: RetrieveOut}, 404, 413, 503),
    auth=TokenAuth(scope="retrieve"),
    summary="Retrieve memories for a task",
)
def retrieve(request, payload: RetrieveIn):
    """Approved memories of the token's bank most relevant to `query`, and a
    `system_block` to put in the agent's system prompt. `filters` narrow
    what may be served (tags, source agent, source metadata). `run_id`
    makes it a later step of a run: same arm, nothing served twice."""
    if not payload.query.strip():
        raise Invalid("query: must contain more than whitespace")
    try:
        result = retrieval_perform(
            bank=request.bank,
            query=payload.query,
            k=payload.k,
            task_id=payload.task_id,
            token=request.api_token,
            filters=_filters(payload.filters),
            run_id=payload.run_id,
            include_served=payload.include_served,
        )
    except EmbeddingModelError as exc:
        raise Unavailable(f"The embedding model is not available: {exc}", code="embedding_unavailable") from exc
    warnings = []
    if result.pending_embeddings:
        warnings.append(
            f"{counted(result.pending_embeddings, 'approved item')} {'is' if result.pending_embeddings == 1 else 'are'} "
            "still being embedded and could not be searched."
        )
    if not result.bank_has_approved:
        warnings.append("This bank has no approved memories yet.")
    # Built as RetrieveOut without validating it: django-ninja serialises an instance of the response's own
    # schema as it is. Every value here is already of its field's type (our own rows), and validating them
    # would be a noticeable share of each retrieval; tests hold the bytes to what validation gives.
    return RetrieveOut.model_construct(
        retrieval_id=result.event.public_id,
        run_id=result.run_id or result.event.public_id,
        mode=result.event.mode,
        items=[
            ScoredMemoryOut.model_construct(
                id=item.public_id,
                title=item.title,
                description=item.description,
                content=item.content,
                score=item.score_parts.score,
                similarity=item.score_parts.similarity,
                utility=item.score_parts.utility,
                n=item.score_parts.n,
            )
            for item, _similarity in result.items
        ],
        system_block=result.system_block,
        warnings=warnings,
        release=result.release,
    )


@router.get(
    "/memories",
    response=api_responses({200: MemoryListOut}),
    auth=TokenAuth(scope="retrieve"),
    summary="List the memories the bank serves",
)
def memories_list(request, page: Query[PageIn]):
    """The memories the bank serves (its production release), newest approval first, each with its
    text as released; `release` is that release's number (null before the bank's first release)."""
    served = served_items(bank=request.bank)
    items = served.page(page.offset, page.limit)
    return {"count": served.items.count(), "release": served.number, "items": [_memory_out(item) for item in items]}


@router.get(
    "/memories/{memory_id}",
    response=api_responses({200: ServedMemoryOut}, 404),
    auth=TokenAuth(scope="retrieve"),
    summary="One memory the bank serves",
)
def memories_detail(request, memory_id: UUID):
    try:
        item, release = served_item_get(bank=request.bank, public_id=memory_id)
    except MemoryItem.DoesNotExist:
        raise NotFound("No memory with this id is served by this bank.") from None
    return {**_memory_out(item), "release": release.number}


class SkillsExportIn(Schema):
    format: Literal["skill", "zip", "agents"] = Field(
        "skill",
        description="skill: SKILL.md; zip: the Agent Skills folder `<name>/SKILL.md` zipped; "
        "agents: a section for AGENTS.md / CLAUDE.md between begin/end markers.",
    )
    name: str = Field(
        "",
        max_length=200,
        description="The skill's name (default: the bank's slug): 1-64 lower-case letters, digits and hyphens.",
    )


_SKILL_FILES = {
    200: {
        "description": "The approved lessons as markdown (skill, agents) or a zip archive (zip).",
        "content": {"text/markdown": {"schema": {"type": "string"}}, "application/zip": {"schema": {"type": "string"}}},
    }
}


@router.get(
    "/export/skills",
    auth=TokenAuth(scope="retrieve"),
    response=api_responses({}),
    tags=["export"],
    summary="Approved memories as Agent Skills / AGENTS.md files",
    openapi_extra={"responses": _SKILL_FILES},
)
def export_skills(request, params: Query[SkillsExportIn]):
    """The bank's approved lessons, grouped by tag, as files an agent reads
    without calling the service, with the bank's content version."""
    lessons = bank_lessons(bank=request.bank)
    name = skill_files.skill_name(lessons, params.name)
    return skill_files.export_response(lessons, fmt=params.format, name=name)
