"""What an evaluation run adds to the harness's own time: the server's share.

    python bench/evaluation.py [--tasks 50] [--tries 3] [--agent-seconds 2.0] [--parallel 8] [--rounds 2]

A bank serves vault lessons (tests/clients/eval_agent.py's scripted agent: it answers a vault's code
from a served lesson, else from what it knows). Production (release 1) holds the codes of half the
unknown vaults, the candidate (release 2) all of them. An evaluation of ``--tasks`` tasks x ``--tries``
tries x 3 arms (candidate, production, the same-budget control) is run through the Python client's
``evaluate`` against gunicorn, the agent sleeping ``--agent-seconds`` per try (a stand-in for its LLM
calls: a short agent makes one or two). Side by side, round by round, the SAME agent runs the same
number of tries with no service at all (a thread pool of the same size: what the harness costs
without us). The server's share is (through the service - without it) / without it.

Every run is checked: every try recorded, each arm's successes exactly what its lessons give (the
candidate solves every vault, production the known half and its own, the control the known half), and
the candidate found better than production and than the control."""

from __future__ import annotations

import argparse
import json
import logging
import statistics
import sys
import time
from concurrent.futures import ThreadPoolExecutor

from common import ROOT, load_note, setup_django, start_server, stop_server

sys.path.insert(0, str(ROOT / "clients" / "python"))

ARMS = ["candidate", "production", "control"]


def _code(n: int) -> str:
    return str(1111 * n)


def _bank(tasks: int):
    """A fresh bank with release 1 (production) and release 2 (the candidate), and a review token."""
    from django.db import transaction

    from accounts.teams.banks import bank_create
    from accounts.teams.services import team_create
    from accounts.tokens.services import api_token_create
    from memories.embedding.items import memory_item_embed_refresh
    from memories.items.services import memory_item_create
    from memories.releases.labels import releasing_locked
    from memories.releases.models import ReleaseSource
    from memories.releases.publishing import release_mode_set, release_write
    from memories.review.decisions import memory_item_approve

    stamp = time.strftime("%Y%m%d%H%M%S")
    from django.contrib.auth import get_user_model

    user = get_user_model().objects.create_user(f"bench-eval-{stamp}", password="bench-pass-123")
    team = team_create(name=f"Eval {stamp}", slug=f"eval-{stamp}", owner=user)
    bank = bank_create(team=team, name="Evaluation bench", slug="evaluation")
    bank.min_similarity, bank.duplicate_threshold, bank.top_k, bank.rate_limit_per_minute = -1.0, 1.0, 10, 100_000
    bank.save(update_fields=["min_similarity", "duplicate_threshold", "top_k", "rate_limit_per_minute"])

    def lesson(title: str, keys: list[int]) -> None:
        content = " ".join(f"The answer for v{n}: {_code(n)}." for n in keys)
        item = memory_item_create(
            bank=bank, title=title, description="Use when a task asks for a vault's code.", content=content, author=user
        )
        memory_item_embed_refresh(item_id=item.pk)
        item.refresh_from_db()
        memory_item_approve(item=item, author=user, confirm_duplicate=True)

    unknown = list(range(tasks // 2 + 1, tasks + 1))
    lesson("Production's vault codes", unknown[: len(unknown) // 2])
    release_mode_set(bank=bank, mode="manual", actor=user)
    lesson("The candidate's vault codes", unknown[len(unknown) // 2 :])
    with transaction.atomic():
        candidate = release_write(releasing=releasing_locked(bank=bank), source=ReleaseSource.PUBLISHED)
    token = api_token_create(bank=bank, name="bench", scopes=["retrieve", "ingest", "review"], created_by=user)
    return bank, candidate.number, token.secret, unknown


def _tasks_jsonl(tasks: int) -> bytes:
    rows = []
    for n in range(1, tasks + 1):
        known = n <= tasks // 2
        rows.append(
            {
                "id": f"v{n}",
                "task": f"Open vault v{n} and report its code",
                "metadata": {"prior": _code(n)} if known else {},
                "check": {"type": "equals", "value": _code(n)},
            }
        )
    return "".join(json.dumps(r) + "\n" for r in rows).encode()


def _agent(seconds: float):
    from tests.clients.eval_agent import answer

    def run(try_: dict) -> dict:
        time.sleep(seconds)
        return answer(try_)

    return run


def _without_service(agent, tries: list[dict], parallel: int) -> float:
    started = time.perf_counter()
    with ThreadPoolExecutor(parallel) as pool:
        list(pool.map(agent, tries))
    return time.perf_counter() - started


def _through_service(base: str, secret: str, agent, tasks: int, tries: int, release: int, parallel: int, label: str):
    import reasoningbank_client as rb

    with rb.Client(base, secret, timeout=120) as client:
        client.upload_task_set(label, _tasks_jsonl(tasks))
        run = client.create_evaluation(label, ARMS, tries, release=release)
        started = time.perf_counter()
        summary = client.evaluate(run.id, agent, parallel=parallel)
        took = time.perf_counter() - started
    assert summary.done and summary.recorded == tasks * tries * len(ARMS) and summary.failed == 0, summary
    return run.id, took


def _check(run_id: str, tasks: int, unknown: list[int]) -> dict:
    """Every try recorded and each arm's successes what its lessons give; the verdicts."""
    from trajectories.evaluation.models import EvalAttempt, EvalRun
    from trajectories.evaluation.verdicts import run_results_refresh

    solved: dict[str, set[int]] = {arm: set() for arm in ARMS}
    for attempt in EvalAttempt.objects.filter(run__public_id=run_id).select_related("arm", "task"):
        assert attempt.state == "recorded" and attempt.check_passed is not None
        if attempt.check_passed:
            solved[attempt.arm.kind].add(int(attempt.task.key[1:]))
    known = set(range(1, tasks // 2 + 1))
    expected = {
        "candidate": set(range(1, tasks + 1)),
        "production": known | set(unknown[: len(unknown) // 2]),
        "control": known,
    }
    assert solved == expected, {arm: sorted(solved[arm] ^ expected[arm]) for arm in ARMS}
    results = run_results_refresh(EvalRun.objects.get(public_id=run_id))
    verdicts = {c["versus"]: c["verdict"] for c in results["comparisons"] if c["arm"] == "candidate"}
    assert results["complete"] and verdicts == {"production": "better", "control": "better"}, verdicts
    return verdicts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=50)
    parser.add_argument("--tries", type=int, default=3)
    parser.add_argument("--agent-seconds", type=float, default=2.0)
    parser.add_argument("--parallel", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--threads", type=int, default=4, help="gunicorn threads (one worker)")
    args = parser.parse_args()
    logging.getLogger("httpx").setLevel(logging.WARNING)  # a line per request would drown the table
    setup_django()
    _bank_row, release, secret, unknown = _bank(args.tasks)
    proc, base = start_server(threads=args.threads)
    agent = _agent(args.agent_seconds)
    total = args.tasks * args.tries * len(ARMS)
    stand_in = [{"task": {"id": f"v{n}", "metadata": {}}, "system_block": ""} for n in range(1, args.tasks + 1)]
    plain_tries = (stand_in * (total // len(stand_in) + 1))[:total]
    without, through = [], []
    try:
        for round_ in range(args.rounds):
            without.append(_without_service(agent, plain_tries, args.parallel))
            run_id, took = _through_service(
                base, secret, agent, args.tasks, args.tries, release, args.parallel, f"vaults {round_}"
            )
            through.append(took)
            _check(run_id, args.tasks, unknown)
            print(f"round {round_ + 1}: without the service {without[-1]:.1f} s, through it {took:.1f} s", flush=True)
    finally:
        stop_server(proc)
    a, b = statistics.median(without), statistics.median(through)
    share = (b - a) / a
    print()
    print(f"{args.tasks} tasks x {args.tries} tries x {len(ARMS)} arms = {total} tries, agent {args.agent_seconds} s")
    print(f"per try, parallel {args.parallel}; gunicorn 1 worker x {args.threads} threads; {load_note()}")
    print("| harness | wall s (median of rounds) | server's share |")
    print("|---|---:|---:|")
    print(f"| the agent alone (no service) | {a:.1f} | — |")
    print(f"| `client.evaluate` through the service | {b:.1f} | {share * 100:+.1f} % |")
    print(f"server time per try, spread over the harness's threads: {(b - a) * args.parallel / total * 1000:.0f} ms")
    assert share <= 0.10, f"the service adds {share * 100:.1f} % to the harness's time (bar: 10 %)"


if __name__ == "__main__":
    main()
