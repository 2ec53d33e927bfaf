"""The README's Configuration table names every environment variable the code
reads, so a new setting cannot ship undocumented (the brief: the README stays
true after every commit)."""

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


def _configuration_table() -> str:
    readme = (ROOT / "README.md").read_text()
    start = readme.index("## Configuration")
    return readme[start : readme.index("\n## ", start + 1)]


def _variables_read() -> set[str]:
    names: set[str] = set()
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            if "migrations" not in path.parts:
                names |= set(READ.findall(path.read_text()))
    return names - NOT_CONFIGURATION


def test_the_scan_finds_the_settings_it_must():
    found = _variables_read()
    # A scan that found nothing would pass the next test vacuously.
    assert {"DATABASE_URL", "RB_LLM_MAX_RETRIES", "LOG_FORMAT", "RB_DISPATCH_INTERVAL", "RB_MCP_HOST"} <= found
    assert len(found) > 50


def test_every_environment_variable_the_code_reads_is_in_the_configuration_table():
    table = _configuration_table()
    missing = sorted(name for name in _variables_read() if f"`{name}`" not in table)
    assert not missing, f"add these to the README's Configuration table: {missing}"
