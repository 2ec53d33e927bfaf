"""The template helpers every page uses: the bank's navigation with the
current page marked, ``clip`` (truncatechars with a fast path), ``iso`` and
``ago`` for time cells."""

import uuid
from datetime import UTC, datetime, timedelta

import pytest
from django.template import Context, Template
from django.test import RequestFactory
from django.urls import reverse
from django.utils import timezone
from django.utils.text import Truncator

from accounts.templatetags.rb import BANK_PAGES, clip, iso
from accounts.templatetags.rb import ago as ago_filter


class _Bank:
    public_id = uuid.uuid4()


def _nav(path: str) -> str:
    request = RequestFactory().get(path)
    return Template("{% load rb %}{% bank_nav bank %}").render(Context({"bank": _Bank, "request": request}))


def test_bank_nav_links_every_page_and_marks_the_current_one():
    bank_id = _Bank.public_id
    items = reverse("memories:items", kwargs={"bank_id": bank_id})
    html = _nav(items)
    assert html.count("<a ") == len(BANK_PAGES)
    for name, label in BANK_PAGES:
        assert f'href="{reverse(name, kwargs={"bank_id": bank_id})}"' in html and f">{label}</a>" in html
    assert html.count('aria-current="page"') == 1
    assert f'<a href="{items}" aria-current="page">Memories</a>' in html


def test_bank_nav_marks_a_section_for_its_sub_pages_but_not_the_dashboard_for_everything():
    bank_id = _Bank.public_id
    dashboard = reverse("trajectories:dashboard", kwargs={"bank_id": bank_id})
    new_item = reverse("memories:item_create", kwargs={"bank_id": bank_id})
    html = _nav(new_item)  # under /items/: Memories is current, the dashboard (a prefix of every page) is not
    assert html.count('aria-current="page"') == 1 and 'aria-current="page">Memories<' in html
    assert 'aria-current="page">Dashboard<' in _nav(dashboard)


@pytest.mark.parametrize(
    ("text", "length"),
    [("short", 10), ("exactly ten", 11), ("a longer ascii sentence", 10), ("naïve café crème brûlée", 10), ("x", 0)],
)
def test_clip_cuts_as_truncatechars_does(text, length):
    assert clip(text, length) == Truncator(text).chars(length)


def test_iso_prints_dates_only():
    moment = datetime(2026, 3, 1, 12, 30, tzinfo=UTC)
    assert iso(moment) == "2026-03-01T12:30:00+00:00"
    assert iso("2026-03-01") == "" and iso(None) == ""


def test_ago_filter_reads_like_the_text_helper():
    assert ago_filter(timezone.now()) == "just now"
    assert ago_filter(timezone.now() - timedelta(minutes=5)) == "5\xa0minutes ago"
    assert ago_filter(None) == ""
