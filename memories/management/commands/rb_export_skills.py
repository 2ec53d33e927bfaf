"""Write a bank's approved lessons as files, for CI pipelines.

    manage.py rb_export_skills --bank TEAM/BANK --format skill --out .claude/skills
    manage.py rb_export_skills --bank TEAM/BANK --format zip --out lessons.zip
    manage.py rb_export_skills --bank TEAM/BANK --format agents --out AGENTS.md

``skill`` writes ``<out>/<name>/SKILL.md`` (or ``--out`` itself when it ends in
``SKILL.md``); ``agents`` replaces the bank's marked section in ``--out``, or
appends it (creating the file). ``--out -`` (the default) prints the file. A
file whose lessons and version are unchanged is left as it is (only the export
time would differ), so a scheduled job commits nothing new. The written path
and the version go to stderr."""

from __future__ import annotations

import sys
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from accounts.models import Bank
from accounts.teams.selectors import bank_find
from memories.serving import skill_files
from memories.serving.skills import BankLessons, bank_lessons
from reasoningbank_site.errors import Invalid


class Command(BaseCommand):
    help = "Export a bank's approved lessons as an Agent Skills folder, a zip of it, or an AGENTS.md section."

    def add_arguments(self, parser):
        parser.add_argument("--bank", required=True, help="Bank slug, or TEAM/SLUG when several teams use the slug.")
        parser.add_argument("--format", choices=skill_files.SKILL_FORMATS, default="skill")
        parser.add_argument(
            "--out",
            default="-",
            help="skill: the skills folder (writes <out>/<name>/SKILL.md) or a path ending in SKILL.md; "
            "zip: the archive; agents: the AGENTS.md / CLAUDE.md to update; -: standard output (default).",
        )
        parser.add_argument("--name", default="", help="The skill's name (default: the bank's slug).")

    def handle(self, *args, **options):
        ref = options["bank"]
        try:
            bank = bank_find(ref=ref)
        except Bank.DoesNotExist:
            raise CommandError(f"No bank '{ref}'. Give its slug or TEAM/SLUG.") from None
        except Bank.MultipleObjectsReturned:
            raise CommandError(f"Several teams have a bank '{ref}': say which, as TEAM/{ref}.") from None
        lessons = bank_lessons(bank=bank)
        try:
            name = skill_files.skill_name(lessons, options["name"])
            written = self._write(lessons, options["format"], name, options["out"])
        except Invalid as exc:
            raise CommandError(exc.message) from None
        if not lessons.count:
            self.stderr.write(f"Warning: bank {ref} has no approved lessons yet.")
        if written:
            held = skill_files.release_label(lessons)
            self.stderr.write(f"{written} (bank {ref}, {held}, version {lessons.version}, {lessons.count} lessons)")

    def _write(self, lessons: BankLessons, fmt: str, name: str, out: str) -> str:
        if fmt == "zip":
            archive = skill_files.skill_zip(lessons, name=name)
            if out == "-":
                sys.stdout.buffer.write(archive)
                sys.stdout.flush()
                return ""
            return _store(Path(out), archive)
        text = skill_files.skill_md(lessons, name=name) if fmt == "skill" else skill_files.agents_section(lessons)
        if out == "-":
            self.stdout.write(text, ending="")
            return ""
        path = Path(out)
        if fmt == "skill" and path.name != "SKILL.md":
            path = path / name / "SKILL.md"
        if fmt == "agents" and path.exists():
            text = skill_files.agents_file_update(_read(path), text, lessons)
        old = _read(path) if path.exists() else None
        if old is not None and skill_files.same_but_for_time(old, text):
            return f"{path}: unchanged"
        return _store(path, text.encode())


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise CommandError(f"Cannot read {path}: {exc}") from None


def _store(path: Path, data: bytes) -> str:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    except OSError as exc:
        raise CommandError(f"Cannot write {path}: {exc}") from None
    return f"{path}: written"
