"""The app's Celery task module, which Celery's autodiscovery imports: the
judge experiments' task, and the learning pipeline's tasks (registered by
importing trajectories.pipeline.tasks)."""

from __future__ import annotations

from datetime import datetime

from celery import shared_task
from django.conf import settings

from reasoningbank_site.celery import db_outage_retry
from trajectories.dashboard.counts import counts_compact
from trajectories.dashboard.report import report_compute, reports_refresh
from trajectories.dashboard.reviewer_report import reviewer_compute, reviewer_reports_refresh
from trajectories.evaluation import tasks as evaluation_tasks  # noqa: F401  (registers its tasks)
from trajectories.impact.announce import impact_verdicts_announce
from trajectories.impact.item_effects import item_effects_record_all
from trajectories.impact.item_tables import item_table_compute, item_tables_refresh
from trajectories.impact.releases import canaries_auto_rollback
from trajectories.judging.experiments import experiment_fail, experiment_run
from trajectories.pipeline.llm_errors import LLMTransientError
from trajectories.pipeline.tasks import retry_countdown  # importing the module registers the pipeline's tasks


@shared_task(bind=True, name="trajectories.experiment_run", ignore_result=True, acks_late=True, **db_outage_retry())
def experiment_run_task(self, experiment_id: int) -> None:
    """Run a judge experiment's cases (trajectories.judging.experiments); progress is on its row."""
    try:
        experiment_run(experiment_id=experiment_id)
    except LLMTransientError as exc:
        retries = self.request.retries
        if retries >= settings.RB_LLM_MAX_RETRIES:
            experiment_fail(experiment_id=experiment_id, error=f"The LLM gave up after {retries + 1} attempts: {exc}")
            return None
        raise self.retry(
            exc=exc, countdown=retry_countdown(retries, exc.retry_after), max_retries=settings.RB_LLM_MAX_RETRIES
        ) from exc


@shared_task(name="trajectories.webhook_verdicts", ignore_result=True)
def webhook_verdicts() -> None:
    """Send impact.verdict where a bank's Impact verdict changed (trajectories.impact.announce)."""
    impact_verdicts_announce()


@shared_task(name="trajectories.item_effects", ignore_result=True)
def item_effects() -> None:
    """Keep Impact's per-item effects on the items and propose the harmful ones
    for retirement (trajectories.impact.item_effects)."""
    item_effects_record_all()


@shared_task(name="trajectories.impact_item_tables", ignore_result=True)
def impact_item_tables() -> None:
    """Recompute the Impact page's kept per-item tables of big banks whose
    sums changed (trajectories.impact.item_tables)."""
    item_tables_refresh()


@shared_task(name="trajectories.impact_item_table", ignore_result=True)
def impact_item_table(bank_id: int, since: str | None, limit: int) -> bool:
    """Compute one window's kept per-item table that a reader found missing
    or outdated (queued by the Impact page or the API, never computed on
    their request; trajectories.impact.item_tables). ``since``: ISO time or None."""
    return item_table_compute(bank_id=bank_id, since=datetime.fromisoformat(since) if since else None, limit=limit)


@shared_task(name="trajectories.dashboard_report", ignore_result=True)
def dashboard_report(bank_id: int) -> bool:
    """Compute one big bank's dashboard report that a reader found missing or asked to recompute (never
    computed on their request; trajectories.dashboard.report)."""
    return report_compute(bank_id=bank_id)


@shared_task(name="trajectories.reviewer_report", ignore_result=True)
def reviewer_report(bank_id: int, days: int, zone: str) -> bool:
    """Compute one big bank's reviewers page figures (a period, a time zone) that a reader found missing or
    asked to recompute (trajectories.dashboard.reviewer_report)."""
    return reviewer_compute(bank_id=bank_id, days=days, zone=zone)


@shared_task(name="trajectories.dashboard_reports", ignore_result=True)
def dashboard_reports() -> int:
    """Recompute the dashboard reports and the reviewers pages' figures of big banks viewed in the last hour
    before they expire (trajectories.dashboard.report, trajectories.dashboard.reviewer_report)."""
    return reports_refresh() + reviewer_reports_refresh()


@shared_task(name="trajectories.canary_rollback", ignore_result=True)
def canary_rollback() -> None:
    """Roll back canaries significantly worse than production, in the banks
    that opted in (trajectories.impact.releases)."""
    canaries_auto_rollback()


@shared_task(name="trajectories.compact_counts", ignore_result=True, acks_late=True)
def compact_counts() -> int:
    """Periodic (beat): merge the dashboard's count rows (trajectories' and items'), one row per key
    (trajectories.dashboard.counts)."""
    return counts_compact()
