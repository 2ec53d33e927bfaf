"""The export API: the Export page's datasets for scripts, streamed as JSON
Lines. Trajectory datasets need the ``review`` scope: they hold every run of
the bank (tasks, steps, answers) and every verdict, which is what a review
tool reads — a token without ``review`` reads back only the runs it sent
itself (``GET /trajectories/{id}``, trajectories/ingest/api.py), and a ``retrieve``
token only approved memories. The memories in the
`reasoning-bank` library's format are the approved items ``GET /memories``
already serves, so ``retrieve`` suffices there."""

from __future__ import annotations

from typing import Literal

from ninja import Field, Query, Router, Schema

from accounts.tokens.auth import TokenAuth, api_responses
from memories.serving.export import served_items_export_reasoning_bank
from reasoningbank_site.replica import reads_from_replica
from trajectories.exports import datasets
from trajectories.exports.views import export_name, jsonl_response

router = Router(tags=["export"])

JSONL = {"application/x-ndjson": {"schema": {"type": "string", "description": "JSON Lines: one object per line."}}}


def _streamed(description: str) -> dict:
    return {"responses": {200: {"description": description, "content": JSONL}}}


class ChatExportIn(Schema):
    verdict: Literal["success", "failure", "all"] = Field(
        "success", description="Runs whose effective verdict is this (all: both)."
    )
    metadata: bool = Field(True, description="Add each run's provenance as a `metadata` key.")


class JudgeEvalIn(Schema):
    input: bool = Field(True, description="Add `judge_input`, the prompt the judge read (rebuilt).")


@router.get(
    "/export/chat.jsonl",
    auth=TokenAuth(scope="review"),
    response=api_responses({}),
    summary="Trajectories as OpenAI chat fine-tuning JSONL",
    openapi_extra=_streamed('One run per line: {"messages": […], "tools": […], "metadata": {…}}.'),
)
@reads_from_replica
def export_chat(request, params: Query[ChatExportIn]):
    """The bank's judged runs (successes by default) as OpenAI chat
    fine-tuning examples, oldest first; runs whose steps retention deleted
    are left out."""
    rows = datasets.chat_finetune_rows(bank=request.bank, verdict=params.verdict, metadata=params.metadata)
    return jsonl_response(rows, export_name(request.bank, f"chat-{params.verdict}"))


@router.get(
    "/export/judge-eval.jsonl",
    auth=TokenAuth(scope="review"),
    response=api_responses({}),
    summary="The human-labelled judge evaluation set",
    openapi_extra=_streamed(
        "One judge verdict per line: prompt_version, model, judge_verdict, human_verdict, agree, judge_input…"
    ),
)
@reads_from_replica
def export_judge_eval(request, params: Query[JudgeEvalIn]):
    """Every LLM judgment of a run a reviewer also judged, against the
    reviewer's verdict, per prompt version."""
    rows = datasets.judge_eval_rows(bank=request.bank, with_input=params.input)
    return jsonl_response(rows, export_name(request.bank, "judge-eval"))


@router.get(
    "/export/memories.reasoning-bank.jsonl",
    auth=TokenAuth(scope="retrieve"),
    response=api_responses({}),
    summary="Approved memories in the reasoning-bank library's format",
    openapi_extra=_streamed("One reasoning_bank.MemoryItem per line (ReasoningBank.import_ reads the file)."),
)
@reads_from_replica
def export_reasoning_bank(request):
    """The approved items as the `reasoning-bank` library's memory records
    (no embeddings: the library embeds on import)."""
    rows = served_items_export_reasoning_bank(bank=request.bank)
    return jsonl_response(rows, export_name(request.bank, "reasoning-bank"))
