"""``python manage.py rb_backup [PATH]`` (``make backup``): dump the database to a file."""

from __future__ import annotations

import time
from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from reasoningbank_site.backup import BackupError, database_backup


class Command(BaseCommand):
    help = "Back up the database (the embedded one, or DATABASE_URL's) to a pg_dump custom-format file."

    def add_arguments(self, parser):
        parser.add_argument(
            "path", nargs="?", default=None, help="Where to write it (default: $RB_DATA_DIR/backups/<time>.dump)."
        )

    def handle(self, *args, path: str | None, **options):
        target = (
            Path(path) if path else settings.DATA_DIR / "backups" / time.strftime("reasoningbank-%Y%m%d-%H%M%S.dump")
        )
        try:
            database_backup(path=target)
        except BackupError as exc:
            raise CommandError(str(exc)) from None
        self.stdout.write(f"Backed up the database to {target}")
