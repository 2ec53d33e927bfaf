"""Resume the learning pipeline on demand: what the every-minute sweeper does,
plus (with --stale-seconds 0) treating every running row as stalled, e.g. right after
a crash or once an LLM endpoint has been configured; with --retry-transient, also
every trajectory parked after temporary LLM errors, at once and with a fresh budget."""

from django.core.management.base import BaseCommand

from reasoningbank_site.text import counted
from trajectories.pipeline.dispatch import parked, trajectories_resume
from trajectories.pipeline.llm import llm_configured
from trajectories.pipeline.sweeper import pipeline_sweep


class Command(BaseCommand):
    help = "Re-enqueue stalled or waiting trajectories (awaiting_llm, stuck judging/distilling, expired MaTTS groups)."

    def add_arguments(self, parser):
        parser.add_argument(
            "--stale-seconds",
            type=int,
            default=None,
            help="Treat rows running (or received) for longer than this as stalled (default RB_PIPELINE_STALE_SECONDS; 0 = all).",
        )
        parser.add_argument(
            "--group-wait-seconds",
            type=int,
            default=None,
            help="Close MaTTS groups waiting longer than this (default RB_MATTS_GROUP_WAIT_SECONDS; 0 = all).",
        )

        parser.add_argument(
            "--retry-transient",
            action="store_true",
            help="Also resume now every trajectory parked after temporary LLM errors (without waiting for "
            "RB_LLM_RESUME_AFTER or the endpoint probe), each stage with a fresh retry budget.",
        )

    def handle(self, *args, stale_seconds=None, group_wait_seconds=None, retry_transient=False, **options):
        if not llm_configured():
            self.stdout.write(
                "No LLM endpoint is configured (RB_LLM_BASE_URL): trajectories awaiting an LLM keep waiting."
            )
        total = 0
        if retry_transient and llm_configured():
            singles, groups = trajectories_resume(parked())
            self.stdout.write(
                f"retried {counted(len(singles), 'trajectory', 'trajectories')} and {counted(len(groups), 'MaTTS group')} parked after temporary "
                f"LLM errors: {singles} {[g for _b, g in groups]}"
            )
            total += len(singles) + len(groups)
        report = pipeline_sweep(stale_seconds=stale_seconds, group_wait_seconds=group_wait_seconds)
        for line in report.lines():
            self.stdout.write(line)
        total += report.total
        self.stdout.write(self.style.SUCCESS(f"{counted(total, 'action')} enqueued."))
