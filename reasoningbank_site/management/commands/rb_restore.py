"""``python manage.py rb_restore PATH`` (``make restore BACKUP=PATH``): replace the database's contents
with a backup made by rb_backup (or ``pg_dump --format=custom``). Stop the app first."""

from __future__ import annotations

from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from reasoningbank_site.backup import BackupError, database_restore


class Command(BaseCommand):
    help = "Restore the database from a backup file made by rb_backup (replaces what is there; stop the app first)."

    def add_arguments(self, parser):
        parser.add_argument("path", help="The backup file (pg_dump custom format).")

    def handle(self, *args, path: str, **options):
        try:
            database_restore(path=Path(path))
        except BackupError as exc:
            raise CommandError(str(exc)) from None
        self.stdout.write(f"Restored the database from {path}")
