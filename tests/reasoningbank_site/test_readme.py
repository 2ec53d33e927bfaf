"""The docs stay true and usable: the configuration tables name every
environment variable the code reads, the README stays short, neither docs nor
code carry work-history markers, and every relative link leads to a file."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("reasoningbank_site", "accounts", "memories", "trajectories")
# envstr("X"), envint("X", …), os.environ.get("X"), os.environ["X"], os.getenv("X")
READ = re.compile(
    r'(?:env(?:str|int|float|bool)\(\s*|os\.environ(?:\.get)?[(\[]\s*|os\.getenv\(\s*)"([A-Z][A-Z0-9_]+)"'
)
# Set by Django/Celery/the test harness for the process, not configuration a user chooses.
NOT_CONFIGURATION = {"DJANGO_SETTINGS_MODULE"}
README_MAX_LINES = 300
# A work item or a session named by its number: history belongs in git, not in the tree.
HISTORY_MARKER = re.compile(r"\b(?:sessions?|issues?)\s+#?\d+", re.IGNORECASE)
# [text](target) — not images' alt text rules, just the link target.
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")


def _docs() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


SOURCE_DIRS = ("accounts", "memories", "trajectories", "reasoningbank_site", "templates", "static", "tests", "bench")
SOURCE_SUFFIXES = {".py", ".html", ".js", ".css", ".txt", ".md", ".sh"}


def _sources() -> list[Path]:
    """The project's own code, templates, tests, benchmarks and client sources (not installed packages)."""
    found = [ROOT / "Makefile", ROOT / ".ci" / "run", *sorted((ROOT / "docker").iterdir())]
    for folder in SOURCE_DIRS:
        found += (p for p in (ROOT / folder).rglob("*") if p.suffix in SOURCE_SUFFIXES)
    for client in ("clients/python", "clients/typescript"):
        found += (
            p
            for p in (ROOT / client).rglob("*")
            if p.suffix in SOURCE_SUFFIXES | {".ts"} and not {"node_modules", "dist"} & set(p.parts)
        )
    return [p for p in found if p.is_file()]


def _configuration_table_rows() -> str:
    """The table rows of docs/configuration.md: a name only in prose does not count."""
    text = (ROOT / "docs" / "configuration.md").read_text()
    return "\n".join(line for line in text.splitlines() if line.lstrip().startswith("|"))


def _variables_read() -> set[str]:
    names: set[str] = set()
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            if "migrations" not in path.parts:
                names |= set(READ.findall(path.read_text()))
    return names - NOT_CONFIGURATION


def _relative_links(path: Path) -> list[str]:
    targets = []
    in_code = False
    for line in path.read_text().splitlines():
        if line.lstrip().startswith("```"):
            in_code = not in_code
            continue
        if in_code:
            continue
        for target in LINK.findall(line):
            if not re.match(r"^[a-z][a-z0-9+.-]*:", target, re.IGNORECASE) and not target.startswith("#"):
                targets.append(target)
    return targets


def test_the_scan_finds_the_settings_it_must():
    found = _variables_read()
    # A scan that found nothing would pass the next test vacuously.
    assert {"DATABASE_URL", "RB_LLM_MAX_RETRIES", "LOG_FORMAT", "RB_DISPATCH_INTERVAL", "RB_MCP_HOST"} <= found
    assert len(found) > 50


def test_every_environment_variable_the_code_reads_is_in_the_configuration_table():
    rows = _configuration_table_rows()
    missing = sorted(name for name in _variables_read() if f"`{name}`" not in rows)
    assert not missing, f"add these to a table in docs/configuration.md: {missing}"


def test_the_readme_is_short():
    lines = (ROOT / "README.md").read_text().count("\n")
    assert lines <= README_MAX_LINES, f"README.md has {lines} lines; move topics into docs/"


def test_the_docs_carry_no_history_markers():
    found = [
        f"{path.relative_to(ROOT)}:{number}: {match.group(0)}"
        for path in _docs()
        for number, line in enumerate(path.read_text().splitlines(), start=1)
        for match in HISTORY_MARKER.finditer(line)
    ]
    assert not found, f"history belongs in git, not the docs: {found}"


def test_the_code_carries_no_history_markers():
    sources = _sources()
    assert len(sources) > 300  # a scan that read nothing would pass vacuously
    found = [
        f"{path.relative_to(ROOT)}:{number}: {match.group(0)}"
        for path in sources
        for number, line in enumerate(path.read_text(errors="replace").splitlines(), start=1)
        for match in HISTORY_MARKER.finditer(line)
    ]
    assert not found, f"history belongs in git, not in the code: {found}"


def test_the_history_marker_pattern_catches_what_it_must():
    # The checks above are only as good as this pattern. The markers are put together here from a word and a
    # number, so that this file holds none itself.
    for word, number in (("Issue", "3"), ("session", "9"), ("Sessions", "2"), ("issues", "4 and 5"), ("issue", "#7")):
        text = f"since {word} {number}"
        assert HISTORY_MARKER.search(text), text
    for text in ("the MCP session goes on", "an issue with the proxy", "sessions and CSRF"):
        assert not HISTORY_MARKER.search(text), text


def test_every_relative_link_in_the_docs_leads_to_a_file():
    broken = []
    checked = 0
    for path in _docs():
        for target in _relative_links(path):
            checked += 1
            file_part = target.split("#", 1)[0]
            if not (path.parent / file_part).exists():
                broken.append(f"{path.relative_to(ROOT)}: {target}")
    assert checked > 20, "the link scan found almost no links: the pattern is broken"
    assert not broken, f"these links lead nowhere: {broken}"
