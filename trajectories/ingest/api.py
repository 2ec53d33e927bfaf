"""Agent API for trajectories: thin adapters over trajectories.ingest (recording) and
trajectories.records (reads). The bank is the token's.

Who reaches which run: a token with the ``review`` scope reads and deletes
every run of its bank (what a review tool needs); any other token (``ingest``,
with or without ``retrieve``) only the runs it sent itself: another token's
run answers 404, as if absent. An ``external_id`` belongs to the token that
first sent it: another token sending it again gets 409
``external_id_taken``, never the first run's id."""

from __future__ import annotations

from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from django.urls import reverse
from ninja import Query, Router, Status

from accounts.tokens.auth import TokenAuth, api_responses
from memories.serving.retrieval import run_retrievals
from reasoningbank_site.errors import NotFound, TooLarge
from reasoningbank_site.replica import reads_from_replica
from trajectories.impact.arms import ArmStats
from trajectories.impact.item_tables import kept_item_table
from trajectories.impact.report import bank_impact, window_start
from trajectories.ingest import batch
from trajectories.ingest import record as ingest
from trajectories.ingest.schemas import (
    BatchIn,
    BatchOut,
    ImpactOut,
    TrajectoryAcceptedOut,
    TrajectoryDeletedOut,
    TrajectoryIn,
    TrajectoryOut,
)
from trajectories.models import Trajectory
from trajectories.otlp.buffer import otlp_spans_ingest
from trajectories.otlp.decode import decode_export
from trajectories.otlp.wire import JSON, PROTOBUF, URL_NAME, export_response
from trajectories.records import deletion
from trajectories.records.selectors import trajectory_derived_items, trajectory_get_for_bank, trajectory_supported_items

router = Router(tags=["trajectories"])


def _url(trajectory: Trajectory) -> str:
    return reverse("api-v1:trajectory_detail", kwargs={"trajectory_id": trajectory.public_id})


def _sent_by_another_token(request, trajectory: Trajectory) -> bool:
    return trajectory.token_id != request.api_token.pk


def _trajectory_for(request, trajectory_id: str) -> Trajectory:
    """The run ``trajectory_id`` of the token's bank, if this token may reach it (see the module docstring)."""
    try:
        trajectory = trajectory_get_for_bank(bank=request.bank, public_id=trajectory_id)
    except Trajectory.DoesNotExist:
        trajectory = None
    if trajectory is None or (
        not request.api_token.has_scope("review") and _sent_by_another_token(request, trajectory)
    ):
        raise NotFound("No such trajectory in this bank.")
    return trajectory


@router.post(
    "/trajectories",
    auth=TokenAuth(scope="ingest"),
    response=api_responses({202: TrajectoryAcceptedOut, 200: TrajectoryAcceptedOut}, 409, 413),
    summary="Send one trajectory",
    description=(
        "Stores the run and queues it for judging and distillation. A repeated `external_id` "
        "answers 200 with the same `id` and `duplicate: true`; an `external_id` another token of the "
        "bank sent first answers 409 `external_id_taken`."
    ),
)
def trajectory_create(request, payload: TrajectoryIn):
    trajectory, created = ingest.trajectory_ingest(bank=request.bank, token=request.api_token, data=payload)
    body = {"id": trajectory.public_id, "status": trajectory.status, "url": _url(trajectory), "duplicate": not created}
    return Status(202 if created else 200, body)


@router.post(
    "/trajectories/batch",
    auth=TokenAuth(scope="ingest"),
    response=api_responses({200: BatchOut}, 413),
    summary="Send many trajectories",
    description=(
        "Each item is validated and stored on its own; the answer says, per item, which succeeded and why others "
        "failed (an `external_id` another token of the bank sent first: `external_id_taken`)."
    ),
)
def trajectory_batch(request, payload: BatchIn):
    results = batch.trajectory_ingest_batch(bank=request.bank, token=request.api_token, items=payload.trajectories)
    rows = []
    for result in results:
        if result.ok:
            rows.append(
                {
                    "index": result.index,
                    "ok": True,
                    "id": result.trajectory.public_id,
                    "status": result.trajectory.status,
                    "duplicate": not result.created,
                }
            )
        else:
            rows.append({"index": result.index, "ok": False, "error": result.error})
    accepted = sum(1 for row in rows if row["ok"])
    return {"results": rows, "accepted": accepted, "failed": len(rows) - accepted}


@router.get(
    "/trajectories/{trajectory_id}",
    auth=TokenAuth(scope="ingest"),
    response=api_responses({200: TrajectoryOut}, 404),
    url_name="trajectory_detail",
    summary="A trajectory's status, verdict and derived items",
    description="A run this token sent (any run of the bank for a token with the `review` scope); others answer 404.",
)
def trajectory_detail(request, trajectory_id: str):
    trajectory = _trajectory_for(request, trajectory_id)
    return {
        "id": trajectory.public_id,
        "status": trajectory.status,
        "status_detail": trajectory.status_detail,
        "verdict": trajectory.verdict,
        "judgments": list(trajectory.judgments.all()),
        "items": [
            {"id": i.public_id, "title": i.title, "status": i.status, "origin": i.origin}
            for i in trajectory_derived_items(trajectory=trajectory)
        ],
        "supported_items": [
            {"id": i.public_id, "title": i.title, "status": i.status, "origin": i.origin}
            for i in trajectory_supported_items(trajectory=trajectory)
        ],
        "created_at": trajectory.created_at,
        "step_count": trajectory.step_count,
        "external_id": trajectory.external_id,
        "group_id": trajectory.group_id,
        "steps_purged_at": trajectory.steps_purged_at,
        "retrieval_ids": [r.public_id for r in run_retrievals(first_id=trajectory.retrieval_id)],
    }


@router.delete(
    "/trajectories/{trajectory_id}",
    auth=TokenAuth(scope="ingest"),
    response=api_responses({200: TrajectoryDeletedOut}, 404, 409),
    summary="Delete a trajectory (personal data)",
    description=(
        "Deletes a run this token sent (any run of the bank for a token with the `review` scope; others answer "
        "404): the trajectory, its judgments and any buffered OTLP spans of its trace, audited (who, when, its id "
        "and external id; not its content). Memory items distilled from it stay, marked as coming from a deleted "
        "trajectory. 409 `trajectory_in_flight` while a worker judges or distills it; retry after a few seconds."
    ),
)
def trajectory_delete(request, trajectory_id: str):
    trajectory = _trajectory_for(request, trajectory_id)
    deleted = deletion.trajectory_delete(trajectory=trajectory, token=request.api_token)
    return {"id": deleted.public_id, "external_id": deleted.external_id, "items_kept": deleted.items_kept}


IMPACT_ITEMS = 20


def _arm(stats: ArmStats) -> dict:
    return {
        "arm": stats.arm,
        "retrievals": stats.retrievals,
        "triggered": stats.triggered,
        "units": stats.units,
        "reported": stats.reported,
        "judged": stats.judged,
        "successes": stats.successes,
        "success_rate": stats.rate,
        "ci_low": stats.low,
        "ci_high": stats.high,
        "report_rate": stats.report_rate,
        "mean_steps": stats.mean_steps,
        "needed": stats.needed,
        "usage_runs": stats.usage_runs,
        "tokens_per_run": stats.tokens_per_run,
        "prompt_tokens_per_run": stats.prompt_tokens_per_run,
        "completion_tokens_per_run": stats.completion_tokens_per_run,
        "memory_tokens_per_retrieval": stats.memory_tokens_per_retrieval,
        "success_per_1k_tokens": stats.success_per_1k_tokens,
    }


@router.get(
    "/impact",
    auth=TokenAuth(scope="retrieve"),
    response=api_responses({200: ImpactOut}),
    summary="Does this bank help? Treatment vs holdout success rates",
    description=(
        "Success of retrievals that served memories (treatment) or withheld them (holdout), one outcome per "
        "retrieval that served or would have served an item, within the latest holdout-fraction period; the "
        "difference with an always-valid 95% confidence sequence (the verdict follows it; safe to poll) and "
        "Newcombe's one-look interval; guardrails (sample-ratio mismatch, differential reporting) that withhold "
        "the verdict; power; and the top 20 items with served-vs-withheld differences, flagged after "
        "Benjamini–Hochberg: with per-item randomisation on, each item served vs left out on its own. The items are "
        "those of the Impact page, on a big bank kept between requests: `items_as_of` is null while they are current, "
        "else when they were computed (a recompute is queued once they are over 5 minutes old). A big window "
        "whose table is not kept yet is never computed on the request: its computation is queued for a worker and "
        "the answer has `items: []` and `items_pending: true` (ask again in a few seconds). `days` limits the "
        "report to retrievals from midnight UTC N days ago; omit it for all time."
    ),
)
@reads_from_replica
def impact(request, days: int | None = Query(None, ge=1, le=3650, description="Window in days; omit for all time.")):
    since = window_start(days)
    report = bank_impact(bank=request.bank, since=since)
    table = kept_item_table(bank=request.bank, since=since, report=report)  # the Impact page's table
    items = table.outcomes[:IMPACT_ITEMS]
    d, found = report.difference, report.assessment
    return {
        "days": days,
        "since": since,
        "holdout_fraction": report.holdout_fraction,
        "holdout_configured": report.holdout_configured,
        "verdict": report.verdict,
        "verdict_text": report.verdict_text,
        "method": report.method,
        "min_per_arm": report.min_per_arm,
        "period": {
            "fraction": report.period.fraction,
            "after": report.period.after,
            "excluded": report.period.excluded,
        },
        "treatment": _arm(report.treatment),
        "holdout": _arm(report.holdout),
        "difference": {
            "estimate": d.estimate,
            "ci_low": d.low,
            "ci_high": d.high,
            "cs_low": d.cs_low,
            "cs_high": d.cs_high,
            "always_valid_p": found.always_valid_p,
        }
        if d
        else None,
        "guardrails": [
            {"name": g.name, "ok": g.ok, "p_value": g.p_value, "detail": g.detail} for g in report.guardrails
        ],
        "power": {
            "mde": found.mde,
            "more_needed_5": report.more_needed_5,
            "more_needed_10": report.more_needed_10,
        },
        "item_baseline": report.baseline,
        "item_comparison": None if table.pending else report.item_comparison,
        "items_as_of": None if table.current else table.computed_at,
        "items_pending": table.pending,
        "items": [
            {
                "id": o.public_id,
                "title": o.title,
                "status": o.status,
                "served_judged": o.served_judged,
                "served_successes": o.served_successes,
                "served_retrievals": o.served_units,
                "served_success_rate": o.served_rate,
                "withheld_judged": o.withheld_judged,
                "withheld_successes": o.withheld_successes,
                "withheld_retrievals": o.withheld_units,
                "withheld_success_rate": o.withheld_rate,
                "difference": o.difference,
                "ci_low": o.low,
                "ci_high": o.high,
                "p_value": o.p_value,
                "shrunk": o.shrunk,
                "served_count": o.served_count,
                "may_hurt": o.may_hurt,
                "may_help": o.may_help,
            }
            for o in items
        ],
    }


_BINARY = {"type": "string", "format": "binary"}
_STATUS = {
    "type": "object",
    "description": "google.rpc.Status (in the request's encoding)",
    "properties": {"code": {"type": "integer"}, "message": {"type": "string"}},
}


def _otlp_content(json_schema: dict) -> dict:
    return {"content": {PROTOBUF: {"schema": _BINARY}, JSON: {"schema": json_schema}}}


@router.post(
    "/otel/v1/traces",
    auth=TokenAuth(scope="ingest"),
    url_name=URL_NAME,
    summary="OTLP/HTTP trace export (OpenTelemetry)",
    description=(
        "Point an OpenTelemetry exporter here (`OTEL_EXPORTER_OTLP_ENDPOINT=<server>/api/v1/otel`, "
        "`OTEL_EXPORTER_OTLP_HEADERS=Authorization=Bearer rb_…`). Protobuf or JSON, optionally gzip. "
        "Spans that are agent work (GenAI semantic conventions, OpenInference) are buffered per trace; "
        "when the root span arrives (or the trace is idle for RB_OTLP_IDLE_SECONDS) the trace becomes one "
        "trajectory whose `external_id` is the trace id (built by a worker after the export is answered). "
        "An export completes at most RB_MAX_BATCH traces: the spans of traces whose root span comes later in it "
        "are rejected (`partialSuccess`), and so are those the token's daily ingest quota leaves no room for. "
        "Answers and errors are in the request's encoding."
    ),
    openapi_extra={
        "requestBody": {
            "required": True,
            **_otlp_content({"type": "object", "description": "ExportTraceServiceRequest (OTLP/JSON)"}),
        },
        "responses": {
            200: {
                "description": "ExportTraceServiceResponse; `partialSuccess` when spans were rejected",
                **_otlp_content({"type": "object", "properties": {"partialSuccess": {"type": "object"}}}),
            },
            **{
                status: {"description": description, **_otlp_content(_STATUS)}
                for status, description in (
                    (400, "Undecodable body"),
                    (401, "No, unknown, revoked or expired token"),
                    (403, "Token without the ingest scope, or archived bank"),
                    (413, "Body over RB_API_MAX_BODY_BYTES (or inflating beyond 4×)"),
                    (415, "Not protobuf/JSON, or an unknown Content-Encoding"),
                    (429, "Rate limited; see Retry-After"),
                )
            },
        },
    },
)
def otlp_traces(request):
    limit = settings.RB_API_MAX_BODY_BYTES
    try:
        length = int(request.META.get("CONTENT_LENGTH") or 0)
    except ValueError:
        length = 0
    if length > limit:
        raise TooLarge(f"Request body is {length} bytes; the limit is {limit} bytes (RB_API_MAX_BODY_BYTES).")
    try:
        body = request.body
    except RequestDataTooBig:
        raise TooLarge(f"The request body exceeds {limit} bytes (RB_API_MAX_BODY_BYTES).") from None
    spans = decode_export(
        body=body,
        content_type=request.META.get("CONTENT_TYPE", ""),
        content_encoding=request.META.get("HTTP_CONTENT_ENCODING", ""),
        max_bytes=limit,
    )
    result = otlp_spans_ingest(bank=request.bank, token=request.api_token, spans=spans)
    return export_response(request, rejected=result.rejected, warnings=result.warnings)
