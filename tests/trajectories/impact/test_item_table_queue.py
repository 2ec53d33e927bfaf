"""A big window's Impact per-item table is never computed on a request
(trajectories.impact.item_tables): with nothing kept, the page shows the rest
at once and polls a fragment until a worker stored the table (giving up
plainly after a minute), and the API answers ``items_pending``; an outdated
table is served with its time while a worker recomputes it, and the page
polls the same fragment until the new one is stored. However many readers,
one computation is queued."""

from __future__ import annotations

import ast
import re
import time
import uuid

from django.core.cache import cache
from django.db import connection
from django.test.utils import CaptureQueriesContext

from tests.conftest import queued_tasks
from tests.trajectories.impact.test_item_tables import (
    afresh,
    api_items,
    flip_an_old_verdict,
    item_sums_run,
    page,
    shown,
)
from tests.trajectories.impact.test_rollups import history
from trajectories.impact import item_tables
from trajectories.impact.report import bank_impact
from trajectories.tasks import impact_item_table

TASK = "trajectories.impact_item_table"


def queued(broker_queue, before) -> list[tuple]:
    """The arguments of the table computations published since ``before``."""
    return [ast.literal_eval(args) for name, args in queued_tasks(broker_queue, before) if name == TASK]


def kept_key(bank) -> str:
    return item_tables._key(bank.pk, None, bank_impact(bank=bank), item_tables.PAGE_ITEMS)


def rows(html: str) -> list[uuid.UUID]:
    """The items of the per-item table's rows, in order."""
    return [uuid.UUID(found) for found in re.findall(r'/items/([0-9a-f-]{36})/"', html)]


def fragment(client, bank, started=None):
    url = f"/banks/{bank.public_id}/impact/items/?days=all"
    response = client.get(url + (f"&started={started}" if started is not None else ""))
    assert response.status_code == 200
    return response


def test_with_nothing_kept_the_page_queues_one_computation_and_polls_for_its_table(
    client, owner, bank, monkeypatch, broker_queue, django_capture_on_commit_callbacks, settings
):
    monkeypatch.setattr(item_tables, "KEPT_MIN_RETRIEVALS", 1)  # a big bank's path, on a small one
    history(bank, seed=11)
    client.force_login(owner)
    before = broker_queue.snapshot()
    with CaptureQueriesContext(connection) as seen, django_capture_on_commit_callbacks(execute=True):
        response = page(client, bank, "all")
        for _ in range(9):  # more readers (tabs, polls) while it waits: no second computation
            page(client, bank, "all")
            fragment(client, bank)
    assert not item_sums_run(seen.captured_queries)
    assert cache.get(kept_key(bank)) is None  # nothing computed on the requests
    html = response.content.decode()
    assert 'id="arm-treatment"' in html and 'id="verdict"' in html  # the rest of the report, at once
    assert response.context["items_poll"].pending and 'id="item-outcomes"' not in html
    assert "Computing the per-item figures for this window" in html
    assert 'aria-live="polite"' in html and 'hx-trigger="load delay:2s"' in html and 'hx-swap="outerHTML"' in html
    assert "data-kept-pending" in html and 'hx-target="#item-figures"' in html  # the shared placeholder
    assert f'hx-get="/banks/{bank.public_id}/impact/items/?days=all&amp;started=' in html

    tasks = queued(broker_queue, before)
    assert tasks == [(bank.pk, None, item_tables.PAGE_ITEMS)]
    assert settings.CELERY_TASK_ROUTES[TASK] == {"queue": "maintenance"}  # beside beat's recomputes
    assert impact_item_table(*tasks[0]) is True  # the worker's run
    assert cache.get(f"{kept_key(bank)}:queued") is None  # its mark released
    assert impact_item_table(*tasks[0]) is False  # a second run finds it current: computes nothing

    with CaptureQueriesContext(connection) as seen:
        swapped = fragment(client, bank, started=int(time.time()))
    assert not item_sums_run(seen.captured_queries)
    html = swapped.content.decode()
    assert 'id="item-outcomes"' in html and "data-kept-pending" not in html and "hx-trigger" not in html
    assert "<html" not in html and 'id="arm-treatment"' not in html  # the partial alone
    shown_page = page(client, bank, "all").context["items"]
    assert shown(shown_page) == afresh(bank, None)[0] != []
    assert html.count("<tr") == len(shown_page) + 1 and all(str(o.public_id) in html for o in shown_page)


def test_the_fragment_stops_polling_after_a_minute_and_offers_to_check_again(client, owner, bank, monkeypatch):
    monkeypatch.setattr(item_tables, "KEPT_MIN_RETRIEVALS", 1)
    history(bank, seed=12)
    client.force_login(owner)
    waiting = fragment(client, bank, started=int(time.time()) - 30)
    assert b'hx-trigger="load delay:2s"' in waiting.content and b"data-kept-gave-up" not in waiting.content
    gave_up = fragment(client, bank, started=int(time.time()) - 61).content.decode()
    assert "data-kept-gave-up" in gave_up and "hx-trigger" not in gave_up
    assert "the workers may be busy or down" in gave_up and "Check again</button>" in gave_up
    assert f'hx-get="/banks/{bank.public_id}/impact/items/?days=all"' in gave_up  # waits afresh
    for started in ("soon", "nan", "inf", "-inf", "1e999"):  # nonsense: it waits from now
        assert b'hx-trigger="load delay:2s"' in fragment(client, bank, started=started).content
    assert cache.get(kept_key(bank)) is None


def test_an_outdated_table_is_served_with_its_time_while_one_recompute_is_queued_and_polled_for(
    client, owner, bank, monkeypatch, broker_queue, django_capture_on_commit_callbacks
):
    monkeypatch.setattr(item_tables, "KEPT_MIN_RETRIEVALS", 1)
    monkeypatch.setattr(item_tables, "KEPT_STALE_SECONDS", -1)  # every change is over the staleness
    trajectories = history(bank, seed=13)
    client.force_login(owner)
    page(client, bank, "all")
    item_tables.item_tables_refresh()
    kept = shown(page(client, bank, "all").context["items"])
    flip_an_old_verdict(trajectories)
    before = broker_queue.snapshot()
    with CaptureQueriesContext(connection) as seen, django_capture_on_commit_callbacks(execute=True):
        responses = [page(client, bank, "all") for _ in range(5)]
        polls = [fragment(client, bank, started=int(time.time())) for _ in range(5)]  # the page's polls meanwhile
    assert not item_sums_run(seen.captured_queries)
    for response in responses:
        assert shown(response.context["items"]) == kept != afresh(bank, None)[0]
        assert response.context["items_as_of"] is not None and response.context["items_poll"].recomputing
        html = response.content.decode()
        assert "A worker is recomputing the per-item figures for this window now" in html
        assert "reload" not in html.split('id="item-figures"')[1].split("</section>")[0]  # it polls instead
        assert "data-kept-recomputing" in html and 'hx-target="#item-figures"' in html  # the shared placeholder
        assert f'hx-get="/banks/{bank.public_id}/impact/items/?days=all&amp;started=' in html
    for poll in polls:  # still being recomputed: the old table, its time and the placeholder, which polls again
        html = poll.content.decode()
        assert "<html" not in html and html.strip().startswith('<div id="item-figures"')
        assert rows(html) == [public_id for public_id, *_ in kept] and "data-items-as-of" in html
        assert 'hx-trigger="load delay:2s"' in html and "data-kept-recomputing" in html
    tasks = queued(broker_queue, before)
    assert tasks == [(bank.pk, None, item_tables.PAGE_ITEMS)]

    gave_up = fragment(client, bank, started=int(time.time()) - 61).content.decode()
    assert "data-kept-gave-up" in gave_up and "hx-trigger" not in gave_up and "Check again</button>" in gave_up
    assert "not recomputed yet" in gave_up and "the workers may be busy or down" in gave_up
    assert 'id="item-outcomes"' in gave_up and "data-items-as-of" in gave_up  # the old table stays
    assert f'hx-get="/banks/{bank.public_id}/impact/items/?days=all"' in gave_up  # waits afresh

    assert impact_item_table(*tasks[0]) is True  # the worker stored the new table
    html = fragment(client, bank, started=int(time.time())).content.decode()
    assert rows(html) == [public_id for public_id, *_ in afresh(bank, None)[0]] != []
    assert 'id="item-outcomes"' in html and "data-items-as-of" not in html  # current: no "as of"
    assert "hx-trigger" not in html and "data-kept-pending" not in html  # the poll stops
    fresh = page(client, bank, "all")
    assert fresh.context["items_as_of"] is None and not fresh.context["items_poll"].recomputing
    assert shown(fresh.context["items"]) == afresh(bank, None)[0]


def test_the_api_answers_items_pending_and_queues_the_table(
    client, bank, auth, monkeypatch, broker_queue, django_capture_on_commit_callbacks
):
    small = api_items(client, auth)  # below the threshold: computed on the request, as always
    assert small["items_pending"] is False
    monkeypatch.setattr(item_tables, "KEPT_MIN_RETRIEVALS", 1)
    history(bank, seed=14)
    before = broker_queue.snapshot()
    with CaptureQueriesContext(connection) as seen, django_capture_on_commit_callbacks(execute=True):
        pending = api_items(client, auth, days=30)
        api_items(client, auth, days=30)
    assert not item_sums_run(seen.captured_queries)
    assert pending["items_pending"] is True and pending["items"] == [] and pending["item_comparison"] is None
    assert pending["treatment"]["retrievals"] > 0 and pending["verdict"]  # the rest of the report
    tasks = queued(broker_queue, before)
    assert len(tasks) == 1 and tasks[0][0] == bank.pk and tasks[0][1] is not None
    impact_item_table(*tasks[0])
    body = api_items(client, auth, days=30)
    assert body["items_pending"] is False and body["items"] and body["item_comparison"] == "randomised"
