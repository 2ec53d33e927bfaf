"""App code goes through Django's and Celery's public API: it never reads a
database connection's transaction bookkeeping, rebuilds model rows from raw
cursors with field converters, or edits a compiled ``Query``. Those internals
change between Django releases without notice."""

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
APPS = ("accounts", "memories", "trajectories", "reasoningbank_site")

INTERNALS = {
    "run_on_commit": "a connection's pending on_commit list (use transaction.on_commit)",
    "savepoint_ids": "a connection's savepoint stack (use transaction.on_commit)",
    "get_db_converters": "rows rebuilt by hand (use a queryset)",
    "deferred_loading": "a query's deferred fields (name the fields)",
}


def _app_modules() -> list[Path]:
    return [p for app in APPS for p in (ROOT / app).rglob("*.py") if "migrations" not in p.parts]


@pytest.mark.parametrize("name", sorted(INTERNALS))
def test_no_app_module_uses_django_internals(name):
    users = [str(p.relative_to(ROOT)) for p in _app_modules() if name in p.read_text()]
    assert users == [], f"{name} ({INTERNALS[name]}) is used by {users}"
