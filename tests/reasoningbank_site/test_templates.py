"""Template hygiene: Django's ``{# … #}`` comments end on the line they start
on; one that runs onto the next line is not a comment, and its text shows on
the page."""

from __future__ import annotations

import re
from pathlib import Path

from django.conf import settings
from django.urls import reverse

from tests.factories import propose_item

UNCLOSED = re.compile(r"\{#(?:(?!#\}).)*$", re.MULTILINE)


def test_every_template_comment_closes_on_its_line():
    roots = [Path(d) for d in settings.TEMPLATES[0]["DIRS"]]
    files = [path for root in roots for path in root.rglob("*.html")]
    assert len(files) > 50  # the templates were found
    unclosed = [
        f"{path.relative_to(settings.BASE_DIR)}:{text.count(chr(10), 0, m.start()) + 1}"
        for path in files
        for text in [path.read_text()]
        for m in UNCLOSED.finditer(text)
    ]
    assert not unclosed, f"{{# … #}} spans lines (use {{% comment %}} or one line each): {unclosed}"


def test_the_focus_view_shows_no_template_comment(client, reviewer, bank, trajectory):
    item = propose_item(bank, trajectory)
    client.force_login(reviewer)
    html = client.get(reverse("memories:review_focus", args=[bank.public_id, item.public_id])).content.decode()
    assert 'data-item data-status="proposed"' in html and "{#" not in html and "#}" not in html
