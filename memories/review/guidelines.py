"""Reviewers' guidelines as HTML: CommonMark by markdown-it-py with raw HTML
off (a tag in the text is shown as text, never rendered) and its link check
on (no javascript:, vbscript:, file: or non-image data: links), so the
output is safe to mark safe. The queue opens them at a reviewer's first read and
after each change, and otherwise as that reviewer left them (GuidelinesRead)."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from functools import lru_cache

from django.utils.safestring import SafeString, mark_safe
from markdown_it import MarkdownIt

from accounts.models import Bank
from memories.review.policy_models import GuidelinesRead, ReviewPolicy


@lru_cache(maxsize=1)
def _renderer() -> MarkdownIt:
    return MarkdownIt("commonmark", {"html": False, "typographer": False}).enable("table")


def guidelines_html(text: str) -> SafeString:
    """``text`` (markdown) as HTML safe to put in a page; "" for none."""
    if not (text or "").strip():
        return mark_safe("")
    return mark_safe(_renderer().render(text))  # raw HTML off: markdown-it escapes every tag in the text


@dataclass(frozen=True)
class GuidelinesPanel:
    """How the queue shows a reviewer the guidelines: ``open`` (unfolded), ``changed`` (edited since that
    reviewer last read them)."""

    open: bool
    changed: bool = False


def _digest(text: str) -> str:
    return hashlib.sha256(text.strip().encode()).hexdigest()


def guidelines_panel_read(*, bank: Bank, user, text: str) -> GuidelinesPanel:
    """How ``user`` sees ``bank``'s guidelines ``text`` now, recording that they were shown: open at the first
    read and after each change (then folded on the next visit), else as the reviewer last left them
    (``guidelines_fold_set``). No text: folded, nothing recorded."""
    if not (text or "").strip():
        return GuidelinesPanel(open=False)
    digest = _digest(text)
    read = GuidelinesRead.objects.filter(bank=bank, user=user).only("digest", "folded").first()
    if read is not None and read.digest == digest:
        return GuidelinesPanel(open=not read.folded)
    GuidelinesRead.objects.update_or_create(bank=bank, user=user, defaults={"digest": digest, "folded": True})
    return GuidelinesPanel(open=True, changed=read is not None)


def guidelines_fold_set(*, bank: Bank, user, folded: bool) -> None:
    """Remember that ``user`` keeps ``bank``'s guidelines folded (or open), as of their current text."""
    text = ReviewPolicy.objects.filter(bank=bank).values_list("guidelines", flat=True).first() or ""
    GuidelinesRead.objects.update_or_create(bank=bank, user=user, defaults={"digest": _digest(text), "folded": folded})
