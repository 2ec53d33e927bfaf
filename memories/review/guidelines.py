"""Reviewers' guidelines as HTML: CommonMark by markdown-it-py with raw HTML
off (a tag in the text is shown as text, never rendered) and its link check
on (no javascript:, vbscript:, file: or non-image data: links), so the
output is safe to mark safe."""

from __future__ import annotations

from functools import lru_cache

from django.utils.safestring import SafeString, mark_safe
from markdown_it import MarkdownIt


@lru_cache(maxsize=1)
def _renderer() -> MarkdownIt:
    return MarkdownIt("commonmark", {"html": False, "typographer": False}).enable("table")


def guidelines_html(text: str) -> SafeString:
    """``text`` (markdown) as HTML safe to put in a page; "" for none."""
    if not (text or "").strip():
        return mark_safe("")
    return mark_safe(_renderer().render(text))  # raw HTML off: markdown-it escapes every tag in the text
