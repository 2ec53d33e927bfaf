"""What the bank serves as files an agent reads without calling the service: an
Agent Skills folder (``<name>/SKILL.md``: YAML front matter, then the lessons
grouped by tag) and a section for ``AGENTS.md`` / ``CLAUDE.md`` between
begin/end markers, so a CI step can replace it in an existing file.

Lesson text is data: every line of it that could open a heading, a fence,
an HTML block (a marker is an HTML comment), a thematic break or a setext
underline is escaped, so nothing in an item changes the file's structure.
The front matter is written by a YAML dumper."""

from __future__ import annotations

import io
import re
import zipfile
from dataclasses import dataclass

import yaml
from django.http import HttpResponse
from django.template.loader import render_to_string
from django.utils.text import Truncator

from memories.serving.preview import system_block_preamble
from memories.serving.skills import BankLessons
from reasoningbank_site.errors import Invalid

# Agent Skills: a name is 1-64 lower-case letters, digits and single hyphens, neither first nor last.
SKILL_NAME_MAX = 64
SKILL_NAME_PATTERN = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")
SKILL_DESCRIPTION_MAX = 1024
SKILL_FORMATS = ("skill", "zip", "agents")
GENERAL_HEADING = "General"
MARKDOWN = "text/markdown; charset=utf-8"

_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")
# A line that is a thematic break (also YAML's document marker, "---").
_THEMATIC = re.compile(r"^[ \t]*([-*_])(?:[ \t]*\1){2,}[ \t]*$")
# List and quote markers a block can sit inside, then what would open a block of its own there. Any
# Unicode whitespace counts as indentation: a reader (or a marker search that strips lines) may skip it.
_CONTAINERS = re.compile(r"^(?:\s*(?:>|[-*+]|\d{1,9}[.)])(?=\s|$))*\s*")
_OPENS_BLOCK = re.compile(r"[#`~<]|(?:=+|-+)\s*$")
# Inline HTML anywhere in a line (a comment, a tag, a declaration): hidden when rendered, read by agents.
# A "<" behind an odd run of backslashes is escaped already; behind an even run (escaped backslashes) it is not.
_INLINE_HTML = re.compile(r"(?<!\\)((?:\\\\)*)<(?=[A-Za-z/!?])")
_ANY_LT = re.compile(r"(?<!\\)((?:\\\\)*)<")
_MARKER = "<!-- reasoningbank:{edge} {bank} -->"


def _lines(text: str) -> list[str]:
    """``text`` as lines: every line break Python knows (\\r, U+2028…) is one, control characters go."""
    return [_CONTROL.sub("", line).rstrip() for line in (text or "").strip().splitlines()]


def _escape_line(line: str) -> str:
    line = _INLINE_HTML.sub(r"\1\\<", line)
    if _THEMATIC.match(line):
        start = len(line) - len(line.lstrip())
        return line[:start] + "\\" + line[start:]
    start = _CONTAINERS.match(line).end()
    if _OPENS_BLOCK.match(line, start):
        return line[:start] + "\\" + line[start:]
    return line


def markdown_block(text: str) -> str:
    """Item text as markdown that stays inside its lesson: lists, emphasis
    and paragraphs are kept; a line that would start a heading, a code fence,
    an HTML block or comment, a thematic break or a setext heading starts
    with a backslash instead (shown as the character itself), whatever
    whitespace comes first; a ``<`` that would open inline HTML or a comment
    anywhere in a line is escaped the same way."""
    return "\n".join(_escape_line(line) for line in _lines(text))


def markdown_inline(text: str) -> str:
    """One-line text for a heading: whitespace collapsed, ``<`` escaped (no
    HTML or comment), a trailing ``#`` run kept as text."""
    line = _ANY_LT.sub(r"\1\\<", " ".join(_CONTROL.sub("", text or "").split()))
    return re.sub(r"(^|\s)(#+)$", r"\1\\\2", line)


def skill_name(lessons: BankLessons, override: str = "") -> str:
    """The skill's name: ``override`` when given (Invalid unless it is a
    valid Agent Skills name), else the bank's slug made into one."""
    if override:
        if len(override) > SKILL_NAME_MAX or not SKILL_NAME_PATTERN.match(override):
            raise Invalid(
                f"name: a skill name is 1-{SKILL_NAME_MAX} lower-case letters, digits and single hyphens, "
                f"not starting or ending with a hyphen (got {override[:80]!r})."
            )
        return override
    name = re.sub(r"[^a-z0-9]+", "-", lessons.bank.slug.lower())[:SKILL_NAME_MAX].strip("-")
    return name or "reasoningbank-lessons"


def _plain(text: str) -> str:
    # Front-matter prose: one line, and no angle brackets (some skill loaders refuse XML tags there).
    return " ".join(_CONTROL.sub("", text or "").split()).replace("<", "‹").replace(">", "›")


def skill_description(lessons: BankLessons) -> str:
    """What the skill holds and when to use it, at most SKILL_DESCRIPTION_MAX characters."""
    bank = lessons.bank
    head = (
        f'Lessons learnt from past agent runs and approved by reviewers, from the ReasoningBank bank "{_plain(bank.name)}" '
        f"({bank.team.slug}/{bank.slug})."
    )
    tail = (
        " Use when starting or planning a task like the ones this bank's agents do; "
        "weigh each lesson against what you observe."
    )
    about = [_plain(bank.description)] if bank.description.strip() else []
    tags = [group.tag for group in lessons.groups if group.tag]
    if tags:
        about.append("Topics: " + ", ".join(tags) + ".")
    room = SKILL_DESCRIPTION_MAX - len(head) - len(tail) - 1
    middle = (" " + Truncator(" ".join(about)).chars(room)) if about else ""
    return head + middle + tail


@dataclass(frozen=True)
class _Group:
    heading: str
    lessons: list[dict]


def _context(lessons: BankLessons) -> dict:
    bank = lessons.bank
    groups = [
        _Group(
            heading=group.tag or GENERAL_HEADING,
            lessons=[
                {
                    "title": markdown_inline(lesson.title),
                    "description": markdown_block(lesson.description),
                    "content": markdown_block(lesson.content),
                    "other_tags": ", ".join(lesson.other_tags),
                }
                for lesson in group.lessons
            ],
        )
        for group in lessons.groups
    ]
    return {
        "bank_name": markdown_inline(bank.name),
        "bank_ref": f"{bank.team.slug}/{bank.slug}",
        "version": lessons.version,
        "release_label": release_label(lessons),
        "count": lessons.count,
        "exported_at": export_time(lessons),
        "preamble": system_block_preamble(),
        "groups": groups,
    }


def release_label(lessons: BankLessons) -> str:
    """Which release a file holds, as its header says it: "release 10", or "no release yet"."""
    return f"release {lessons.release}" if lessons.release is not None else "no release yet"


def export_time(lessons: BankLessons) -> str:
    return lessons.exported_at.strftime("%Y-%m-%dT%H:%M:%SZ")


def _tidy(text: str) -> str:
    # Templates leave blank lines where tags were; markdown reads any run of them as one.
    return re.sub(r"\n{3,}", "\n\n", text).strip() + "\n"


def skill_md(lessons: BankLessons, *, name: str) -> str:
    """SKILL.md: front matter (``name``, ``description``, ``metadata`` with
    the bank, the release it holds, content version, lesson count and export
    time), then the lessons."""
    front = {
        "name": name,
        "description": skill_description(lessons),
        "metadata": {
            "bank": f"{lessons.bank.team.slug}/{lessons.bank.slug}",
            "release": str(lessons.release) if lessons.release is not None else "none",
            "version": lessons.version,
            "lessons": str(lessons.count),
            "exported-at": export_time(lessons),
        },
    }
    front_matter = yaml.safe_dump(front, sort_keys=False, allow_unicode=True, width=10_000)
    body = render_to_string("memories/skills/SKILL.md", {**_context(lessons), "front_matter": front_matter})
    return _tidy(body)


def skill_zip(lessons: BankLessons, *, name: str) -> bytes:
    """The skill folder as a zip archive: ``<name>/SKILL.md``."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        entry = zipfile.ZipInfo(f"{name}/SKILL.md", date_time=lessons.exported_at.timetuple()[:6])
        entry.compress_type = zipfile.ZIP_DEFLATED
        entry.external_attr = 0o644 << 16
        archive.writestr(entry, skill_md(lessons, name=name))
    return buffer.getvalue()


def agents_markers(lessons: BankLessons) -> tuple[str, str]:
    """The section's first and last lines (one pair per bank, so several banks share a file)."""
    ref = f"{lessons.bank.team.slug}/{lessons.bank.slug}"
    return _MARKER.format(edge="begin", bank=ref), _MARKER.format(edge="end", bank=ref)


def agents_section(lessons: BankLessons) -> str:
    """The AGENTS.md / CLAUDE.md section: the markers around a ``##`` heading,
    the system block's framing (hints to weigh against what the agent
    observes), the version, and the lessons grouped by tag."""
    begin, end = agents_markers(lessons)
    body = render_to_string("memories/skills/agents_section.md", _context(lessons))
    return _tidy(f"{begin}\n{body.strip()}\n{end}")


def _is_marker(line: str, marker: str) -> bool:
    """Whether ``line`` is ``marker`` exactly (a CRLF file's line keeps its \\r): never a line that merely
    contains it, or has it behind whitespace, as an escaped lesson line may."""
    return line.removesuffix("\r") == marker


def agents_file_update(existing: str, section: str, lessons: BankLessons) -> str:
    """``existing`` (a whole AGENTS.md) with this bank's section replaced
    in place, or appended after a blank line when it has none. Raises
    Invalid when a begin marker has no end marker after it (the file was
    edited by hand; nothing is guessed)."""
    begin, end = agents_markers(lessons)
    lines = existing.split("\n")
    starts = [i for i, line in enumerate(lines) if _is_marker(line, begin)]
    if not starts:
        kept = existing.rstrip("\n")
        return (kept + "\n\n" if kept else "") + section
    first = starts[0]
    last = next((i for i in range(first + 1, len(lines)) if _is_marker(lines[i], end)), None)
    if last is None:
        raise Invalid(f"The file has the line {begin!r} but no {end!r} after it: fix the markers by hand.")
    after = "\n".join(lines[last + 1 :])
    return "\n".join(lines[:first]) + ("\n" if first else "") + section + (after if after.strip() else "")


_TIMESTAMP = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ")


def same_but_for_time(old: str, new: str) -> bool:
    """Whether two exports differ only in their export time (a CI step then leaves the file alone)."""
    return _TIMESTAMP.sub("", old) == _TIMESTAMP.sub("", new)


def export_response(lessons: BankLessons, *, fmt: str, name: str) -> HttpResponse:
    """One export (``fmt`` of SKILL_FORMATS) as a download: ``SKILL.md``,
    ``<name>.zip`` or ``<name>-agents-section.md``, with the bank's content
    version in ``X-Bank-Version`` and the release it holds in ``X-Bank-Release``."""
    if fmt == "zip":
        body, filename, kind = skill_zip(lessons, name=name), f"{name}.zip", "application/zip"
    elif fmt == "agents":
        body, filename, kind = agents_section(lessons), f"{name}-agents-section.md", MARKDOWN
    else:
        body, filename, kind = skill_md(lessons, name=name), "SKILL.md", MARKDOWN
    response = HttpResponse(body, content_type=kind)
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    response["X-Content-Type-Options"] = "nosniff"
    response["X-Bank-Version"] = lessons.version
    response["X-Bank-Release"] = str(lessons.release) if lessons.release is not None else "none"
    return response
