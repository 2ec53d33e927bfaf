"""The Impact page's kept per-item table (trajectories.impact.item_tables):
what it shows equals item_outcomes computed afresh, for every window the
page offers, through verdicts, the beat's merge and its roll-up; an unchanged
bank is not summed again; a big bank's table may be minutes old, says so,
and beat recomputes it; a small one is computed on each request."""

from __future__ import annotations

from django.db import connection
from django.test.utils import CaptureQueriesContext

from memories.serving.rollups import rollup_before
from memories.tasks import retrieval_tallies_compact_task
from tests.trajectories.impact.test_rollups import TODAY, at, history, seed_tallies
from trajectories.impact import item_tables
from trajectories.impact.item_tables import item_tables_refresh
from trajectories.impact.items import item_outcomes
from trajectories.impact.report import bank_impact, window_start
from trajectories.judging.verdicts import judgment_record
from trajectories.models import JudgmentSource, Trajectory

WINDOWS = {"7": 7, "30": 30, "90": 90, "all": None}


def shown(outcomes) -> list:
    return [
        (
            o.public_id,
            o.item.pk if o.item else None,
            o.served_units,
            round(o.served_y, 9),
            o.served_judged,
            o.served_successes,
            o.withheld_units,
            round(o.withheld_y, 9),
            o.withheld_judged,
            o.withheld_successes,
            o.difference,
            o.low,
            o.high,
            o.p_value,
            o.shrunk,
            o.may_hurt,
            o.may_help,
        )
        for o in outcomes
    ]


def page(client, bank, window):
    response = client.get(f"/banks/{bank.public_id}/impact/?days={window}")
    assert response.status_code == 200
    return response


def afresh(bank, days):
    report = bank_impact(bank=bank, since=window_start(days))
    return shown(item_outcomes(bank=bank, since=window_start(days), report=report)), report.item_comparison


def assert_page_is_current(client, bank):
    for window in WINDOWS:  # a reader queues what is missing or outdated; a worker (beat here) computes it
        page(client, bank, window)
    item_tables_refresh()
    for window, days in WINDOWS.items():
        response = page(client, bank, window)
        expected, comparison = afresh(bank, days)
        assert shown(response.context["items"]) == expected, window
        assert response.context["report"].item_comparison == comparison
        assert response.context["items_as_of"] is None and b"data-items-as-of" not in response.content


def item_sums_run(queries) -> bool:
    return any("SELECT item::text, side" in q["sql"] for q in queries)  # the days' aggregate or the totals


def flip_an_old_verdict(trajectories) -> None:
    """A human flips an old verdict of a treatment retrieval: a change the per-item table shows (the served and
    withheld sides; a holdout retrieval's moves no randomised comparison, only the order Σy was summed in)."""
    old = Trajectory.objects.filter(
        pk__in=[t.pk for t in trajectories],
        retrieval__created_at__lt=at(rollup_before(TODAY), 0),
        retrieval__results__1__isnull=False,
        retrieval__arm="treatment",
        verdict__in=["success", "failure"],
    ).first()
    judgment_record(
        trajectory=old, source=JudgmentSource.HUMAN, label="failure" if old.verdict == "success" else "success"
    )


def test_the_kept_table_equals_a_fresh_one_through_verdicts_merge_and_roll_up(
    client, owner, bank, other_bank, monkeypatch
):
    monkeypatch.setattr(item_tables, "KEPT_MIN_RETRIEVALS", 1)  # a big bank's path, on a small one
    monkeypatch.setattr(item_tables, "KEPT_STALE_SECONDS", -1)  # never served once changed
    trajectories = history(bank, seed=3)
    history(other_bank, seed=4)
    client.force_login(owner)
    assert_page_is_current(client, bank)
    assert afresh(bank, None)[0]  # items are compared

    with CaptureQueriesContext(connection) as seen:  # nothing changed: the kept table, not the sums
        again = page(client, bank, "all")
    assert not item_sums_run(seen.captured_queries)
    assert shown(again.context["items"]) == afresh(bank, None)[0]

    before = afresh(bank, None)[0]
    flip_an_old_verdict(trajectories)  # a human verdict appends signed rows
    assert afresh(bank, None)[0] != before
    assert_page_is_current(client, bank)
    flip_an_old_verdict(trajectories)
    retrieval_tallies_compact_task()  # beat: merge, then roll up old months
    assert_page_is_current(client, bank)
    history(other_bank, seed=5)  # another bank's writes leave this bank's table kept
    with CaptureQueriesContext(connection) as seen:
        page(client, bank, "all")
    assert not item_sums_run(seen.captured_queries)


def test_a_big_banks_table_may_be_minutes_old_says_so_and_beat_recomputes_it(
    client, owner, bank, monkeypatch, settings
):
    entry = next(e for e in settings.CELERY_BEAT_SCHEDULE.values() if e["task"] == "trajectories.impact_item_tables")
    assert entry["schedule"] <= 60
    monkeypatch.setattr(item_tables, "KEPT_MIN_RETRIEVALS", 1)
    trajectories = history(bank, seed=6)
    client.force_login(owner)
    assert page(client, bank, "all").context["items_poll"].pending  # nothing kept: queued for a worker
    item_tables_refresh()
    kept = shown(page(client, bank, "all").context["items"])
    flip_an_old_verdict(trajectories)

    with CaptureQueriesContext(connection) as seen:
        response = page(client, bank, "all")
    assert not item_sums_run(seen.captured_queries)
    assert shown(response.context["items"]) == kept != afresh(bank, None)[0]
    assert response.context["items_as_of"] is not None and b"data-items-as-of" in response.content

    assert item_tables_refresh() >= 1
    assert_page_is_current(client, bank)
    assert item_tables_refresh() == 0  # nothing changed since
    flip_an_old_verdict(trajectories)
    monkeypatch.setattr(item_tables, "WATCH_SECONDS", 0)  # nobody read it lately: beat leaves it
    assert item_tables_refresh() == 0
    monkeypatch.setattr(item_tables, "WATCH_SECONDS", 3600)

    monkeypatch.setattr(item_tables, "KEPT_STALE_SECONDS", -1)  # too old: a worker recomputes it
    flip_an_old_verdict(trajectories)
    assert_page_is_current(client, bank)


def test_a_small_banks_table_is_computed_on_each_request(client, owner, bank):
    trajectories = history(bank, seed=7)
    client.force_login(owner)
    page(client, bank, "all")
    flip_an_old_verdict(trajectories)
    with CaptureQueriesContext(connection) as seen:
        response = page(client, bank, "all")
    assert item_sums_run(seen.captured_queries)
    assert shown(response.context["items"]) == afresh(bank, None)[0]
    assert not any("rb_cache" in q["sql"] for q in seen.captured_queries)


def test_the_freshness_check_reads_the_newest_ids_of_the_primary_key(bank, other_bank, monkeypatch):
    """What a kept table's check costs does not grow with the table: a range of the primary key."""
    monkeypatch.setattr(item_tables, "RECENT_IDS", 100)
    seed_tallies([bank.pk, other_bank.pk], days=30, items=300)
    with CaptureQueriesContext(connection) as seen:
        assert not item_tables._changed_since(bank.pk, item_tables._fingerprint(bank.pk))
    assert len(seen.captured_queries) == 4  # newest id, recent count; then new rows, recent count
    with connection.cursor() as cursor:
        for query in seen.captured_queries:
            cursor.execute("EXPLAIN " + query["sql"])
            plan = "\n".join(row[0] for row in cursor.fetchall())
            assert "Seq Scan" not in plan and "memories_retrievaltally_pkey" in plan, plan


def api_items(client, auth, days=None) -> dict:
    response = client.get("/api/v1/impact" + (f"?days={days}" if days else ""), **auth)
    assert response.status_code == 200, response.content
    return response.json()


def test_the_api_serves_the_pages_kept_table_and_says_as_of_when(client, owner, bank, auth, monkeypatch):
    monkeypatch.setattr(item_tables, "KEPT_MIN_RETRIEVALS", 1)
    trajectories = history(bank, seed=8)
    client.force_login(owner)
    with CaptureQueriesContext(connection) as seen:
        pending = api_items(client, auth)
    assert not item_sums_run(seen.captured_queries) and pending["items_pending"]  # queued, not computed here
    assert item_tables_refresh() >= 1  # computed once, by a worker
    body = api_items(client, auth)
    assert body["items_as_of"] is None and not body["items_pending"]
    with CaptureQueriesContext(connection) as seen:
        shown_page = page(client, bank, "all").context["items"]
        again = api_items(client, auth)
    assert not item_sums_run(seen.captured_queries)  # the page and a repeat call read the kept table
    assert again == body
    expected = [
        (str(o.public_id), o.served_judged, o.withheld_judged, o.difference, o.p_value, o.shrunk, o.may_hurt)
        for o in shown_page[:20]
    ]
    got = [
        (i["id"], i["served_judged"], i["withheld_judged"], i["difference"], i["p_value"], i["shrunk"], i["may_hurt"])
        for i in body["items"]
    ]
    assert got == expected and len(got) == min(20, len(afresh(bank, None)[0]))

    flip_an_old_verdict(trajectories)  # changed: the kept figures, at most minutes old, say so
    with CaptureQueriesContext(connection) as seen:
        stale = api_items(client, auth)
    assert not item_sums_run(seen.captured_queries)
    assert stale["items"] == body["items"] and stale["items_as_of"] is not None
    assert item_tables_refresh() >= 1  # beat recomputes it: current again, with the new figures
    fresh = api_items(client, auth)
    assert fresh["items_as_of"] is None and fresh["items"] != body["items"]
    assert [(i["id"], i["difference"]) for i in fresh["items"]] == [
        (str(o[0]), o[10]) for o in afresh(bank, None)[0][:20]
    ]
