"""A big bank's dashboard report and reviewers page figures are never computed on a request
(reasoningbank_site.kept_queue): with nothing kept, the page shows the rest at once and polls a fragment until a
worker stored them (giving up plainly after a minute); "Recompute now" queues a recompute and shows the kept
figures meanwhile; however many readers, one computation is queued, on the maintenance queue. A small bank's are
computed on each view, as before."""

from __future__ import annotations

import ast
import time

from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from tests import factories
from tests.conftest import queued_tasks
from tests.trajectories.dashboard.test_dashboard_report import report_reads
from tests.trajectories.dashboard.test_reviewer_report import _approved_by, _approved_cell, figure_reads
from trajectories.dashboard import report as report_module
from trajectories.tasks import dashboard_report, reviewer_report

HTMX = {"HTTP_HX_REQUEST": "true", "HTTP_HX_TARGET": "live"}


def queued(broker_queue, before, name: str) -> list[tuple]:
    """The arguments of the ``name`` tasks published since ``before``."""
    return [ast.literal_eval(args) for task, args in queued_tasks(broker_queue, before) if task == name]


def labelled(bank, owner) -> None:
    """One trajectory judged by the LLM and a human: a big bank's report once KEPT_MIN_ROWS is 1."""
    t = factories.make_done_trajectory(bank)
    factories.record_verdict(t, "success")
    factories.record_verdict(t, "success", source="human", author=owner)


def test_a_big_banks_dashboard_with_nothing_kept_queues_one_report_and_polls_for_it(
    client, bank, owner, monkeypatch, broker_queue, django_capture_on_commit_callbacks, settings
):
    monkeypatch.setattr(report_module, "KEPT_MIN_ROWS", 1)
    labelled(bank, owner)
    client.force_login(owner)
    url = reverse("trajectories:dashboard", kwargs={"bank_id": bank.public_id})
    figures = reverse("trajectories:dashboard_figures", kwargs={"bank_id": bank.public_id})
    before = broker_queue.snapshot()
    with CaptureQueriesContext(connection) as seen, django_capture_on_commit_callbacks(execute=True):
        response = client.get(url)
        for _ in range(3):  # more readers (tabs, the 5-second refresh, the poll) while it waits
            client.get(url)
            client.get(url, **HTMX)
            client.get(figures)
    assert not report_reads(seen), report_reads(seen)
    html = response.content.decode()
    assert 'id="live"' in html and "Pipeline" in html  # the counts, at once
    assert html.count("data-report-pending") == 2 and "agree on" not in html  # the kept panels: placeholders
    assert 'id="charts"' not in html and 'id="agreement-by-version"' not in html
    assert 'hx-trigger="load delay:2s"' in html and 'hx-target="#report-charts"' in html
    assert f'hx-get="{figures}?started=' in html
    assert "data-report-pending" in client.get(url, **HTMX).content.decode()  # the refresh computes none either

    assert queued(broker_queue, before, "trajectories.dashboard_report") == [(bank.pk,)]
    assert settings.CELERY_TASK_ROUTES["trajectories.dashboard_report"] == {"queue": "maintenance"}
    assert dashboard_report(bank.pk) is True  # the worker's run

    with CaptureQueriesContext(connection) as seen:
        swapped = client.get(f"{figures}?started={int(time.time())}").content.decode()
    assert not report_reads(seen)
    assert "<html" not in swapped and 'id="live"' not in swapped  # the partials alone
    assert 'id="report-charts"' in swapped and 'id="chart-agreement"' in swapped and "hx-trigger" not in swapped
    assert '<div id="report-by-version" hx-swap-oob="true">' in swapped and 'id="agreement-by-version"' in swapped
    page = client.get(url).content.decode()
    assert "agree on 1 of 1 trajectory" in page and "data-report-pending" not in page and "Computed just now" in page
    assert "agree on 1 of 1 trajectory" in client.get(url, **HTMX).content.decode()


def test_recompute_now_on_a_big_bank_queues_it_and_shows_the_kept_report_meanwhile(
    client, bank, owner, monkeypatch, broker_queue, django_capture_on_commit_callbacks
):
    monkeypatch.setattr(report_module, "KEPT_MIN_ROWS", 1)
    labelled(bank, owner)
    client.force_login(owner)
    url = reverse("trajectories:dashboard", kwargs={"bank_id": bank.public_id})
    client.get(url)
    dashboard_report(bank.pk)
    labelled(bank, owner)
    before = broker_queue.snapshot()
    with CaptureQueriesContext(connection) as seen, django_capture_on_commit_callbacks(execute=True):
        pages = [client.get(url + "?fresh=1").content.decode() for _ in range(10)]
    assert not report_reads(seen)
    assert all("agree on 1 of 1 trajectory" in p and "data-report-recomputing" in p for p in pages)
    assert "Recompute now" not in pages[0]
    assert queued(broker_queue, before, "trajectories.dashboard_report") == [(bank.pk,)]
    assert dashboard_report(bank.pk) is True
    page = client.get(url).content.decode()
    assert "agree on 2 of 2 trajectories" in page and "Recompute now" in page


def test_the_dashboards_poll_gives_up_after_a_minute_and_offers_to_check_again(client, bank, owner, monkeypatch):
    monkeypatch.setattr(report_module, "KEPT_MIN_ROWS", 1)
    labelled(bank, owner)
    client.force_login(owner)
    figures = reverse("trajectories:dashboard_figures", kwargs={"bank_id": bank.public_id})
    waiting = client.get(f"{figures}?started={int(time.time()) - 30}").content.decode()
    assert 'hx-trigger="load delay:2s"' in waiting and "data-kept-gave-up" not in waiting
    gave_up = client.get(f"{figures}?started={int(time.time()) - 61}").content.decode()
    assert "data-kept-gave-up" in gave_up and "hx-trigger" not in gave_up
    assert "the workers may be busy or down" in gave_up and "Check again</button>" in gave_up
    assert f'hx-get="{figures}"' in gave_up  # waits afresh
    for started in ("soon", "nan", "inf", "-inf", "1e999"):  # nonsense: it waits from now
        assert 'hx-trigger="load delay:2s"' in client.get(f"{figures}?started={started}").content.decode()


def test_a_small_banks_dashboard_queues_nothing(client, bank, owner, broker_queue, django_capture_on_commit_callbacks):
    labelled(bank, owner)
    client.force_login(owner)
    url = reverse("trajectories:dashboard", kwargs={"bank_id": bank.public_id})
    before = broker_queue.snapshot()
    with CaptureQueriesContext(connection) as seen, django_capture_on_commit_callbacks(execute=True):
        page = client.get(url + "?fresh=1").content.decode()
    assert len(report_reads(seen)) == 3 and "agree on 1 of 1 trajectory" in page and "data-report-pending" not in page
    assert queued(broker_queue, before, "trajectories.dashboard_report") == []


def heavy_reads(seen) -> list[str]:
    """The reviewers figures' reads (item versions, judgments, review votes), leaving out the bounded counts
    that say whether a bank is big."""
    return [sql for sql in figure_reads(seen) if "LIMIT" not in sql]


def test_a_big_banks_reviewers_page_with_nothing_kept_queues_once_and_polls(
    client, bank, owner, alice, monkeypatch, broker_queue, django_capture_on_commit_callbacks, settings
):
    monkeypatch.setattr(report_module, "KEPT_MIN_ROWS", 1)
    _approved_by(bank, alice)
    client.force_login(owner)
    url = reverse("trajectories:reviewers", kwargs={"bank_id": bank.public_id})
    figures = reverse("trajectories:reviewers_figures", kwargs={"bank_id": bank.public_id})
    before = broker_queue.snapshot()
    with CaptureQueriesContext(connection) as seen, django_capture_on_commit_callbacks(execute=True):
        response = client.get(url)
        for _ in range(9):
            client.get(url if _ % 2 else f"{figures}?days=14")
    assert not heavy_reads(seen), heavy_reads(seen)
    html = response.content.decode()
    assert "Reviewers</h1>" in html and 'data-reviewer="alice"' not in html and 'id="agreement"' not in html
    assert "Computing the reviewers' figures for this period" in html
    assert f'hx-get="{figures}?days=14&amp;started=' in html and 'hx-target="#reviewer-figures"' in html
    assert queued(broker_queue, before, "trajectories.reviewer_report") == [(bank.pk, 14, "UTC")]
    assert settings.CELERY_TASK_ROUTES["trajectories.reviewer_report"] == {"queue": "maintenance"}
    assert reviewer_report(bank.pk, 14, "UTC") is True

    with CaptureQueriesContext(connection) as seen:
        swapped = client.get(f"{figures}?days=14&started={int(time.time())}").content.decode()
    assert not figure_reads(seen)
    assert "<html" not in swapped and "Reviewers</h1>" not in swapped and "hx-trigger" not in swapped
    assert _approved_cell(swapped, "alice") == "1" and 'id="agreement"' in swapped and "data-report-age" in swapped

    before = broker_queue.snapshot()
    with django_capture_on_commit_callbacks(execute=True):
        fresh = client.get(url + "?days=14&fresh=1").content.decode()
    assert "data-report-recomputing" in fresh and _approved_cell(fresh, "alice") == "1"
    assert queued(broker_queue, before, "trajectories.reviewer_report") == [(bank.pk, 14, "UTC")]

    gave_up = client.get(f"{figures}?days=30&started={int(time.time()) - 61}").content.decode()
    assert "data-kept-gave-up" in gave_up and f'hx-get="{figures}?days=30"' in gave_up
    assert "data-kept-gave-up" not in client.get(f"{figures}?days=30&started=nan").content.decode()


def test_a_small_banks_reviewers_page_queues_nothing(
    client, bank, owner, alice, broker_queue, django_capture_on_commit_callbacks
):
    _approved_by(bank, alice)
    client.force_login(owner)
    before = broker_queue.snapshot()
    with django_capture_on_commit_callbacks(execute=True):
        page = client.get(reverse("trajectories:reviewers", kwargs={"bank_id": bank.public_id})).content.decode()
    assert _approved_cell(page, "alice") == "1" and "data-kept-pending" not in page
    assert queued(broker_queue, before, "trajectories.reviewer_report") == []
