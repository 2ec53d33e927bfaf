"""A big bank's dashboard report and reviewers page figures are never computed on a request
(reasoningbank_site.kept_queue): with nothing kept, the page shows the rest at once and polls a fragment until a
worker stored them (giving up plainly after a minute); "Recompute now" queues a recompute and shows the kept
figures meanwhile, beside the same placeholder in its recomputing form, which polls the same fragment until the
new figures are stored (and gives up the same way); however many readers, one computation is queued, on the
maintenance queue. A small bank's are computed on each view, as before."""

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


def test_recompute_now_on_a_big_bank_shows_the_kept_report_and_polls_until_the_new_one_is_stored(
    client, bank, owner, monkeypatch, broker_queue, django_capture_on_commit_callbacks
):
    monkeypatch.setattr(report_module, "KEPT_MIN_ROWS", 1)
    labelled(bank, owner)
    client.force_login(owner)
    url = reverse("trajectories:dashboard", kwargs={"bank_id": bank.public_id})
    figures = reverse("trajectories:dashboard_figures", kwargs={"bank_id": bank.public_id})
    client.get(url)
    dashboard_report(bank.pk)
    labelled(bank, owner)
    started = int(time.time())
    before = broker_queue.snapshot()
    with CaptureQueriesContext(connection) as seen, django_capture_on_commit_callbacks(execute=True):
        pages = [client.get(url + "?fresh=1").content.decode() for _ in range(10)]
        pages.append(client.get(url).content.decode())  # a reader without ?fresh while it is queued
        live = client.get(url, **HTMX).content.decode()  # the 5-second refresh meanwhile
        polls = [client.get(f"{figures}?started={started}").content.decode() for _ in range(3)]
    assert not report_reads(seen)
    for page in pages:  # the kept report, its time, and the placeholder in its recomputing form, which polls
        assert "agree on 1 of 1 trajectory" in page and 'id="chart-agreement"' in page
        assert 'id="agreement-by-version"' in page and "data-report-age" in page and "Computed just now" in page
        assert "data-report-recomputing" in page and "Recompute now" not in page and "reload" not in page
        charts = page.split('<div id="report-charts"')[1].split('<div id="live"')[0]
        assert "data-kept-recomputing" in charts and 'hx-trigger="load delay:2s"' in charts
        assert f'hx-get="{figures}?started=' in charts and 'hx-target="#report-charts"' in charts
        assert "A worker is recomputing the charts and the judge and distill figures now" in charts
    assert "agree on 1 of 1 trajectory" in live and "data-report-recomputing" in live and "Recompute now" not in live
    for poll in polls:  # still queued: the kept figures and the placeholder again, which polls on
        assert "<html" not in poll and poll.strip().startswith('<div id="report-charts"')
        assert "data-kept-recomputing" in poll and f'hx-get="{figures}?started={started}"' in poll
        assert 'id="chart-agreement"' in poll and '<div id="report-by-version" hx-swap-oob="true">' in poll
        assert '<section class="panel" id="judge-human" hx-swap-oob="true">' in poll
        assert "agree on 1 of 1 trajectory" in poll and "data-report-recomputing" in poll
    assert queued(broker_queue, before, "trajectories.dashboard_report") == [(bank.pk,)]

    gave_up = client.get(f"{figures}?started={started - 61}").content.decode()
    assert "data-kept-gave-up" in gave_up and "hx-trigger" not in gave_up and "Check again</button>" in gave_up
    assert "not recomputed yet" in gave_up and "the workers may be busy or down" in gave_up
    assert 'id="chart-agreement"' in gave_up and "agree on 1 of 1 trajectory" in gave_up  # the kept ones stay
    assert f'hx-get="{figures}"' in gave_up  # waits afresh

    assert dashboard_report(bank.pk) is True  # the worker stored the new report
    with CaptureQueriesContext(connection) as seen:
        swapped = client.get(f"{figures}?started={started}").content.decode()
    assert not report_reads(seen)
    assert "data-kept-pending" not in swapped and "hx-trigger" not in swapped  # the poll ends
    assert 'id="chart-agreement"' in swapped and 'id="agreement-by-version"' in swapped
    assert '<section class="panel" id="judge-human" hx-swap-oob="true">' in swapped
    assert "agree on 2 of 2 trajectories" in swapped and "Computed just now" in swapped
    assert f'href="{url}?fresh=1">Recompute now</a>' in swapped  # the page's link, not the fragment's
    page = client.get(url).content.decode()
    assert "agree on 2 of 2 trajectories" in page and "Recompute now" in page and "data-kept-pending" not in page
    assert "Recompute now" in client.get(url, **HTMX).content.decode()


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
    assert "data-kept-recomputing" in fresh and _approved_cell(fresh, "alice") == "1"
    assert queued(broker_queue, before, "trajectories.reviewer_report") == [(bank.pk, 14, "UTC")]

    gave_up = client.get(f"{figures}?days=30&started={int(time.time()) - 61}").content.decode()
    assert "data-kept-gave-up" in gave_up and f'hx-get="{figures}?days=30"' in gave_up
    assert "data-kept-gave-up" not in client.get(f"{figures}?days=30&started=nan").content.decode()


def test_recompute_now_on_a_big_banks_reviewers_page_shows_the_kept_figures_and_polls_for_the_new_ones(
    client, bank, owner, alice, monkeypatch, broker_queue, django_capture_on_commit_callbacks
):
    monkeypatch.setattr(report_module, "KEPT_MIN_ROWS", 1)
    _approved_by(bank, alice)
    client.force_login(owner)
    url = reverse("trajectories:reviewers", kwargs={"bank_id": bank.public_id})
    figures = reverse("trajectories:reviewers_figures", kwargs={"bank_id": bank.public_id})
    assert reviewer_report(bank.pk, 14, "UTC") is True
    _approved_by(bank, alice)
    started = int(time.time())
    before = broker_queue.snapshot()
    with CaptureQueriesContext(connection) as seen, django_capture_on_commit_callbacks(execute=True):
        pages = [client.get(url + "?days=14&fresh=1").content.decode() for _ in range(5)]
        pages.append(client.get(url + "?days=14").content.decode())  # a reader without ?fresh while it is queued
        polls = [client.get(f"{figures}?days=14&started={started}").content.decode() for _ in range(3)]
    assert not figure_reads(seen), figure_reads(seen)
    for html in pages + polls:  # the kept figures, their time, and the placeholder in its recomputing form
        assert _approved_cell(html, "alice") == "1" and "data-report-age" in html and "Recompute now" not in html
        assert "data-kept-recomputing" in html and 'hx-trigger="load delay:2s"' in html and "reload" not in html
        assert 'hx-target="#reviewer-figures"' in html
        assert "A worker is recomputing the reviewers' figures for this period now" in html
    assert all(f'hx-get="{figures}?days=14&amp;started=' in page for page in pages)
    for poll in polls:  # still queued: the fragment alone, which polls on
        assert poll.strip().startswith('<div id="reviewer-figures"') and "Reviewers</h1>" not in poll
        assert f'hx-get="{figures}?days=14&amp;started={started}"' in poll
    assert queued(broker_queue, before, "trajectories.reviewer_report") == [(bank.pk, 14, "UTC")]

    gave_up = client.get(f"{figures}?days=14&started={started - 61}").content.decode()
    assert "data-kept-gave-up" in gave_up and "hx-trigger" not in gave_up and "not recomputed yet" in gave_up
    assert _approved_cell(gave_up, "alice") == "1" and f'hx-get="{figures}?days=14"' in gave_up

    assert reviewer_report(bank.pk, 14, "UTC") is True  # the worker stored the new figures
    with CaptureQueriesContext(connection) as seen:
        swapped = client.get(f"{figures}?days=14&started={started}").content.decode()
    assert not figure_reads(seen)
    assert _approved_cell(swapped, "alice") == "2" and "Computed just now" in swapped
    assert "data-kept-pending" not in swapped and "hx-trigger" not in swapped  # the poll ends
    assert f"{url}?days=14&amp;fresh=1" in swapped  # Recompute now, again


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
