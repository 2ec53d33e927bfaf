"""Resume the learning pipeline on demand: what the every-minute sweeper does,
plus (with --all-stale) treating every running row as stalled, e.g. right after
a crash or once an LLM endpoint has been configured."""

from django.core.management.base import BaseCommand

from trajectories.llm import llm_configured
from trajectories.sweeper import pipeline_sweep


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

    def handle(self, *args, stale_seconds=None, group_wait_seconds=None, **options):
        if not llm_configured():
            self.stdout.write(
                "No LLM endpoint is configured (RB_LLM_BASE_URL): trajectories awaiting an LLM keep waiting."
            )
        report = pipeline_sweep(stale_seconds=stale_seconds, group_wait_seconds=group_wait_seconds)
        for line in report.lines():
            self.stdout.write(line)
        self.stdout.write(self.style.SUCCESS(f"{report.total} action(s) enqueued."))
