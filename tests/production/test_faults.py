"""Faults injected from outside into the production topology (run twice: as processes, and as the
compose file's containers under podman): real processes, real signals, checked as a user would — the
trajectories' states, judgments and items through the agent API, and the
rows in PostgreSQL."""

from __future__ import annotations

import re
import uuid

import httpx
import pytest

from tests.production.topology import Topology, TopologyError, wait_until

pytestmark = pytest.mark.production

# The fake LLM's distillation (tests.trajectories.llm_answers.ITEMS_MD) proposes these two items.
ITEM_TITLES = ["Answer in the asked format", "Prefer the official source"]


def _marker(what: str) -> str:
    return f"{what}-{uuid.uuid4().hex[:10]}"


def _post(api: httpx.Client, prod: Topology, task: str) -> httpx.Response:
    return api.post("/trajectories", json=prod.trajectory_body(task))


def _rows_with(prod: Topology, marker: str) -> int:
    return prod.postgres.count("SELECT count(*) FROM trajectories_trajectory WHERE task LIKE %s", (f"%{marker}%",))


def _assert_learnt_once(final: dict) -> None:
    """Done, judged once by the LLM, two items (no duplicates)."""
    assert final["status"] == "done", final["status_detail"]
    assert [j["source"] for j in final["judgments"]] == ["llm"], final["judgments"]
    assert final["verdict"] == "success"
    # New proposals, or (the bank already holds them from an earlier test) supporting evidence on them: once each.
    learnt = [item["title"] for item in final["items"] + final["supported_items"]]
    assert sorted(learnt) == ITEM_TITLES, final


def test_a_worker_sigkilled_inside_an_llm_call_is_done_exactly_once_after_it_restarts(prod: Topology):
    marker = _marker("killed-worker")
    prod.llm.hold(marker)  # the judge call for this trajectory hangs until released
    with prod.client() as api:
        response = _post(api, prod, f"Find the Sunday opening hours of the library ({marker})")
        assert response.status_code == 202, response.text
        trajectory_id = response.json()["id"]
        assert prod.llm.held.wait(90), "no worker called the LLM for the trajectory"
        victim = wait_until(
            lambda: prod.worker_holding_port(prod.llm.held_peer_port), timeout=60, what="the worker inside the call"
        )
        victim.kill()  # SIGKILL to the worker's whole process group, mid-call
        assert victim.killed_by_sigkill()
        prod.llm.release()
        assert api.get(f"/trajectories/{trajectory_id}").json()["status"] == "judging"
        prod.restart_worker(victim)  # as compose (restart: unless-stopped) or systemd would
        final = prod.wait_finished(api, [trajectory_id], timeout=90)[trajectory_id]

    _assert_learnt_once(final)
    # The killed call, then one judge call and one distill call: judged and distilled exactly once.
    assert prod.llm.calls_with(marker) == 3
    assert _rows_with(prod, marker) == 1


def _swept(logs: list[str]) -> set[int]:
    """The trajectory ids the sweeper re-sent, from its "sweeper: ..." log lines in ``logs``."""
    ids: set[int] = set()
    for line in "\n".join(logs).splitlines():
        if "sweeper: " in line:
            for listed in re.findall(
                r"(?:stuck in \w+|never picked up|whose worker was lost \([^)]*\)): \[([\d, ]*)\]", line
            ):
                ids.update(int(n) for n in listed.split(",") if n.strip())
    return ids


def test_b_ingest_answers_while_redis_is_frozen_then_stopped_and_all_is_processed_after(prod: Topology):
    marker = _marker("redis-outage")
    codes: list[int] = []
    ids: list[str] = []
    logged = {worker.name: len(worker.log()) for worker in prod.worker_services}
    with prod.client() as api:

        def post(n: int) -> None:
            response = _post(api, prod, f"Find the opening hours, run {n} ({marker})")
            codes.append(response.status_code)
            if response.status_code < 300:
                ids.append(response.json()["id"])

        prod.redis.freeze()  # SIGSTOP: connections hang, nothing is refused
        try:
            for n in range(4):
                post(n)  # answered while Redis is still frozen: no POST waits for the broker
        finally:
            prod.redis.stop()  # SIGKILL while frozen: now connections are refused
        for n in range(4, 8):
            post(n)
        prod.redis.start()  # back on the same port; no other step
        final = prod.wait_finished(api, ids, timeout=120)

    assert codes == [202] * 8
    for answer in final.values():
        _assert_learnt_once(answer)
    assert _rows_with(prod, marker) == 8  # one row per POST: nothing lost, nothing doubled
    # The dispatcher published the rows whose publish failed, not the sweeper's stale re-send.
    pks = set(prod.postgres.ids("SELECT id FROM trajectories_trajectory WHERE task LIKE %s", (f"%{marker}%",)))
    swept = _swept([worker.log()[logged.get(worker.name, 0) :] for worker in prod.worker_services])
    assert not pks & swept, f"the sweeper re-sent {sorted(pks & swept)} of {sorted(pks)}"


def test_c_postgres_restart_answers_503_during_and_recovers_without_restarting_anything(prod: Topology):
    marker = _marker("db-restart")
    app_pids = {service.name: service.pids() for service in [prod.web, *prod.worker_services, prod.beat]}
    during: list[httpx.Response] = []
    with prod.client() as api:
        before = _post(api, prod, f"Find the opening hours, before ({marker})")
        assert before.status_code == 202, before.text
        before_id = before.json()["id"]

        prod.postgres.stop()
        for _ in range(3):
            during.append(_post(api, prod, f"Find the opening hours, during ({marker})"))
            during.append(api.get(f"/trajectories/{before_id}"))
            during.append(api.post("/retrieve", json={"query": "opening hours"}))
        prod.postgres.start()

        def answers_2xx() -> bool:
            try:
                return api.get(f"/trajectories/{before_id}").status_code == 200
            except httpx.HTTPError:
                return False

        wait_until(answers_2xx, timeout=90, what="the API to answer 2xx again")
        after = _post(api, prod, f"Find the opening hours, after ({marker})")
        assert after.status_code == 202, after.text
        final = prod.wait_finished(api, [before_id, after.json()["id"]], timeout=90)

    assert len(during) >= 6
    statuses = sorted({response.status_code for response in during})
    assert statuses == [503], [(r.status_code, r.text[:200]) for r in during if r.status_code != 503]
    for response in during:
        assert response.headers["Retry-After"] == "5"
        assert response.json()["code"] == "database_unavailable"
    for answer in final.values():
        _assert_learnt_once(answer)
    assert _rows_with(prod, marker) == 2  # nothing written during the outage
    # Recovered with the same processes: gunicorn (master and workers), both Celery workers, beat.
    assert {service.name: service.pids() for service in [prod.web, *prod.worker_services, prod.beat]} == app_pids


def test_d_llm_down_longer_than_the_retry_budget_then_back_every_trajectory_finishes(prod: Topology):
    markers = [_marker(f"llm-outage-{n}") for n in range(3)]
    attempts = int(prod.app_env()["RB_LLM_MAX_RETRIES"]) + 1
    prod.llm.down = True  # every call (and GET /v1/models) answers 503
    with prod.client() as api:
        ids = []
        for marker in markers:
            response = _post(api, prod, f"Find the opening hours ({marker})")
            assert response.status_code == 202, response.text
            ids.append(response.json()["id"])
        # Down until every trajectory has used its whole retry budget and is parked (needs_attention today,
        # awaiting_llm once transient exhaustion is resumable), and the sweeper has found the endpoint still down.
        prod.wait_finished(api, ids, timeout=120, states=("needs_attention", "awaiting_llm"))
        assert all(prod.llm.calls_with(marker) >= attempts for marker in markers), prod.llm.prompts
        probes = prod.llm.probes
        wait_until(lambda: prod.llm.probes > probes, timeout=60, what="a probe of the endpoint while it is down")
        prod.llm.down = False  # back; nobody does anything
        try:
            final = prod.wait_finished(api, ids, timeout=120, states=("done",))
        except TopologyError:
            states = [api.get(f"/trajectories/{i}").json() for i in ids]
            pytest.fail(f"not every trajectory finished: {[(s['status'], s['status_detail']) for s in states]}")

    for answer in final.values():
        _assert_learnt_once(answer)


def test_e_one_scrape_sums_gunicorn_workers_and_celery_workers(prod: Topology):
    """/metrics on the production topology: the LLM calls are made in the Celery
    workers, the requests in two gunicorn workers; one scrape shows both."""
    marker = _marker("metrics")
    with prod.client() as api:
        response = _post(api, prod, f"Find the museum's opening hours ({marker})")
        assert response.status_code == 202, response.text
        _assert_learnt_once(prod.wait_finished(api, [response.json()["id"]], timeout=90)[response.json()["id"]])
    scrape = httpx.get(f"{prod.base_url}/metrics", timeout=10)  # loopback: allowed without a token
    assert scrape.status_code == 200, scrape.text[:300]

    def value(name: str, **labels: str) -> float:
        """The sum of the samples of ``name`` whose labels include ``labels`` (any label order)."""
        total = 0.0
        for line in scrape.text.splitlines():
            sample, _, number = line.rpartition(" ")
            metric, _, rest = sample.partition("{")
            if metric == name and all(f'{key}="{want}"' in rest for key, want in labels.items()):
                total += float(number)
        return total

    assert value("rb_llm_calls_total", model="fake-model", purpose="judge", outcome="ok") >= 1
    assert value("rb_llm_calls_total", model="fake-model", purpose="distill", outcome="ok") >= 1
    assert value("rb_llm_tokens_total", model="fake-model") > 0
    assert value("rb_http_request_duration_seconds_count", method="POST", route="api/v1/trajectories") >= 1
    assert value("rb_broker_up") == 1
