"""Seed the local demo (idempotent): the data is reasoningbank_site/demo.json,
loaded through the real services by reasoningbank_site.demo.demo_seed."""

from __future__ import annotations

from pathlib import Path

from django.core.management.base import BaseCommand

from reasoningbank_site.demo import demo_seed


class Command(BaseCommand):
    help = "Seed the local demo data (admin user, team, bank, token, trajectories, memories). Idempotent."

    def add_arguments(self, parser):
        parser.add_argument(
            "--token-file",
            default=None,
            help="Where the demo token's secret is kept (default: $RB_DATA_DIR/demo-token.txt).",
        )

    def handle(self, *args, **options):
        report = demo_seed(token_path=Path(options["token_file"]) if options["token_file"] else None)
        for line in report.warnings:
            self.stdout.write(self.style.WARNING(line))
        for line in report.notes:
            self.stdout.write(line)
        self.stdout.write(f"Demo bank {report.bank} ready; its API token is in {report.token_path}.")
