"""The actions of a text and of an item: every extractor's actions in the
order they appear, one per (kind, value) (the first excerpt kept), and what a
task asked for (the same extraction, plus each normalised value written in
the task's own words)."""

from __future__ import annotations

import re

from memories.trust.actions.commands import command_actions
from memories.trust.actions.installs import package_actions, permission_actions
from memories.trust.actions.network import network_actions
from memories.trust.actions.payments import payment_actions
from memories.trust.actions.shapes import Action, ActionKind

# A command's name is too coarse a signal by itself ("npm ci", "rm", "curl -O"): what it fetches or installs is
# judged by its host and its package. A command is a finding when it runs code its own way or widens rights.
RISKY_COMMAND_PARTS = {"pipe to a shell", "sudo", "chmod", "chown", "eval"}


def text_actions(text: str) -> list[Action]:
    """Every action ``text`` recommends, in the order they appear, one per (kind, value)."""
    text = text or ""
    found: list[tuple[int, Action]] = []
    for start, command, line in command_actions(text):
        found.append((start, command))
        found += [(start, a) for a in package_actions(line)]
    found += permission_actions(text)
    found += payment_actions(text)
    hosts = network_actions(text)
    found += [(max(text.find(a.excerpt), 0), a) for a in hosts]
    seen, out = set(), []
    for _, a in sorted(found, key=lambda pair: pair[0]):
        if a.key not in seen:
            seen.add(a.key)
            out.append(a)
    return out


def flaggable(a: Action) -> bool:
    """Whether ``a``, new to a bank, is a finding: every host, address, package, payment and permission;
    a command only with a risky part of RISKY_COMMAND_PARTS (the rest are recorded and shown, not flagged)."""
    return a.kind != ActionKind.COMMAND or bool(RISKY_COMMAND_PARTS & set(a.risks))


def item_actions(*, title: str, description: str, content: str) -> list[Action]:
    """The actions of an item's three fields, one per (kind, value), title first."""
    seen, out = set(), []
    for field in (title, description, content):
        for a in text_actions(field):
            if a.key not in seen:
                seen.add(a.key)
                out.append(a)
    return out


def task_asks(task: str):
    """A predicate: whether ``task`` (what the user asked) asked for an action. It does when the task
    recommends the same (kind, value) itself, or writes the action's normalised value (its part after a
    registry or scheme prefix, "requests" of "pypi:requests") as a whole word."""
    task = task or ""
    asked = {a.key for a in text_actions(task)}
    lowered = " ".join(task.lower().split())

    def asks(a: Action) -> bool:
        if a.key in asked:
            return True
        value = a.value.split(":", 1)[1] if ":" in a.value and "://" not in a.value else a.value
        value = " ".join(value.lower().split())
        return bool(value) and re.search(rf"(?<![\w.@/-]){re.escape(value)}(?![\w-]|\.\w)", lowered) is not None

    return asks
