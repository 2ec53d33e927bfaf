"""The layout's rules, checked: imports point one way (the contracts in pyproject.toml's
[tool.importlinter], run by import-linter), each name has one import path (no package re-exports names
it does not use), and every app module stays under the size a reader takes in at once."""

import ast

from importlinter.cli import lint_imports

from tests.helpers import ROOT

APPS = ("accounts", "memories", "reasoningbank_site", "trajectories")
MAX_LINES = 400
# Celery's own pattern: the project package loads the Celery app when Django starts.
RE_EXPORTS_KEPT = ["reasoningbank_site/__init__.py:1 celery_app"]


def app_modules():
    for app in APPS:
        for path in sorted((ROOT / app).rglob("*.py")):
            if "migrations" not in path.parts:
                yield path


def test_the_import_contracts_are_kept():
    assert lint_imports(config_filename=str(ROOT / "pyproject.toml")) == 0


def test_no_package_re_exports_what_it_does_not_use():
    """A name is imported from the module that defines it: an ``__init__`` that imported a name only to
    hand it on would give it a second path."""
    re_exports = []
    for path in app_modules():
        if path.name != "__init__.py":
            continue
        tree = ast.parse(path.read_text())
        imported = {
            (alias.asname or alias.name).split(".")[0]: node.lineno
            for node in tree.body
            if isinstance(node, ast.Import | ast.ImportFrom) and getattr(node, "module", "") != "__future__"
            for alias in node.names
        }
        used = {node.id for node in ast.walk(tree) if isinstance(node, ast.Name)}
        re_exports += [f"{path.relative_to(ROOT)}:{line} {name}" for name, line in imported.items() if name not in used]
    assert re_exports == RE_EXPORTS_KEPT


def test_app_modules_stay_short():
    long = [
        f"{path.relative_to(ROOT)}: {count} lines"
        for path in app_modules()
        if (count := len(path.read_text().splitlines())) > MAX_LINES
    ]
    assert long == []
