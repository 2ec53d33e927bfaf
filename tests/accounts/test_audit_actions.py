"""The one vocabulary of audit actions: every name is in the registry
(accounts/audit/actions.py) and follows its rule, every writer in the code
base names its action from it, nothing else can be written, each of a memory
item's version actions has its audit action, and docs/review-ui.md lists
them all."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from accounts.audit.actions import ITEM_VERSION_ACTIONS, AuditAction
from accounts.audit.services import audit_record
from memories.items.models import ItemStatus

ROOT = Path(__file__).resolve().parents[2]
APPS = ("accounts", "memories", "trajectories", "reasoningbank_site")
NAME_RULE = re.compile(r"^[a-z]+(_[a-z]+)*\.[a-z]+(_[a-z]+)*$")
WRITERS = {"audit_record", "audit_event"}


def _modules():
    for app in APPS:
        for path in sorted((ROOT / app).rglob("*.py")):
            if "migrations" not in path.parts:
                yield path, ast.parse(path.read_text(), filename=str(path))


def _called(node: ast.Call) -> str:
    return node.func.id if isinstance(node.func, ast.Name) else getattr(node.func, "attr", "")


def _kwarg(node: ast.Call, name: str):
    return next((k.value for k in node.keywords if k.arg == name), None)


def _functions(tree):
    return [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)]


def _registry_names(node, scope, tree, seen=frozenset()) -> list[str] | None:
    """The registry members ``node`` (an action argument) can be, or None when it is anything else
    (a string, an f-string, a computed name). A name is followed to its assignments in ``scope``, or,
    when it is a parameter of ``scope``, to what the calls of that function in ``tree`` pass."""
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "AuditAction":
        return [node.attr]
    if isinstance(node, ast.IfExp):
        body, orelse = _registry_names(node.body, scope, tree, seen), _registry_names(node.orelse, scope, tree, seen)
        return None if body is None or orelse is None else body + orelse
    if isinstance(node, ast.Call) and _called(node) == "item_version_audit_action":
        return [a.name for a in ITEM_VERSION_ACTIONS.values()]
    if not isinstance(node, ast.Name) or (scope.name, node.id) in seen:
        return None
    seen = seen | {(scope.name, node.id)}
    values = [  # (value, the function it is evaluated in)
        (n.value, scope)
        for n in ast.walk(scope)
        if isinstance(n, ast.Assign) and any(isinstance(t, ast.Name) and t.id == node.id for t in n.targets)
    ]
    if node.id in [a.arg for a in scope.args.args + scope.args.kwonlyargs]:
        for caller in _functions(tree):
            for call in ast.walk(caller):
                if isinstance(call, ast.Call) and _called(call) == scope.name:
                    values.append((_kwarg(call, node.id), caller))
    found = []
    for value, where in values:
        names = _registry_names(value, where, tree, seen) if value is not None else None
        if names is None:
            return None
        found += names
    return found or None


def _writers():
    """``(where, names or None)`` for each call of audit_record / audit_event in the code base."""
    for path, tree in _modules():
        for scope in ast.walk(tree):
            if not isinstance(scope, ast.FunctionDef):
                continue
            for node in ast.walk(scope):
                if isinstance(node, ast.Call) and _called(node) in WRITERS and scope.name not in WRITERS:
                    where = f"{path.relative_to(ROOT)}:{node.lineno}"
                    yield where, _registry_names(_kwarg(node, "action"), scope, tree)


def test_every_action_follows_the_naming_rule_and_has_a_label():
    for action in AuditAction:
        _obj, verb = action.value.split(".")
        assert NAME_RULE.match(action.value), action.value
        assert not verb.split("_")[0].endswith(("ed", "ing")), f"{action.value}: the verb in its base form"
        assert action.label and action.label != action.value and action.label[0].isupper(), action.value


def test_every_writer_names_its_action_from_the_registry():
    writers = list(_writers())
    assert len(writers) > 40  # the scan finds the writers (teams, tokens, webhooks, items, releases, trajectories…)
    not_from_registry = [where for where, names in writers if names is None]
    assert not_from_registry == [], "name these actions with AuditAction members"
    unknown = {name for _where, names in writers for name in names} - set(AuditAction.names)
    assert unknown == set()


def test_every_registered_action_has_a_writer():
    written = {name for _where, names in _writers() for name in names}
    assert set(AuditAction.names) - written == set()


def test_an_action_outside_the_registry_is_refused(bank):
    for name in ("memory_item.auto-approved", "release.published", "memory_item.approved"):
        with pytest.raises(ValueError, match="not an audit action"):
            audit_record(action=name, bank=bank)
    assert audit_record(action=AuditAction.RELEASE_PUBLISH, bank=bank).action == "release.publish"


def _version_actions() -> set[str]:
    """The version actions the code can write: the ``action=`` of each call that records a version
    (followed to what a variable holds), with the statuses a move names."""
    callers = {"VersionChange", "item_version_record", "item_status_move"}
    found = set(ItemStatus.values) | {"reverted"}
    for path, tree in _modules():
        if not path.is_relative_to(ROOT / "memories"):
            continue
        for scope in _functions(tree):
            for call in ast.walk(scope):
                if not (isinstance(call, ast.Call) and _called(call) in callers):
                    continue
                value = _kwarg(call, "action")
                values = [value] if value is not None else []
                if isinstance(value, ast.Name):
                    values += [
                        n.value
                        for n in ast.walk(scope)
                        if isinstance(n, ast.Assign)
                        and any(isinstance(t, ast.Name) and t.id == value.id for t in n.targets)
                    ]
                for v in values:
                    found |= {c.value for c in ast.walk(v) if isinstance(c, ast.Constant) and isinstance(c.value, str)}
    return found


def test_each_item_version_action_has_its_audit_action():
    found = _version_actions()
    assert {"created", "auto-approved", "kept-both", "supported", "repeated"} <= found  # the scan sees them
    assert found - set(ITEM_VERSION_ACTIONS) == set()


def test_the_docs_list_every_action_with_its_label():
    docs = (ROOT / "docs" / "review-ui.md").read_text()
    missing = [a.value for a in AuditAction if f"| `{a.value}` | {a.label} |" not in docs]
    assert missing == []
