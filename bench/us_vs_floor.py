"""The retrieval goal without the reasoning-bank library: ``POST /api/v1/retrieve``
through gunicorn (bench/common.py) against the floor (in-process query embedding
+ the production SQL search, ``approved_items_search``), interleaved per query
(every order of the sides in turn), on the items compare_reasoning_bank.py loads
(reused when a previous run left the same size). Each answer is asserted to
serve k items.

    RB_DATA_DIR=/tmp/rb-bench .venv/bin/python bench/us_vs_floor.py --sizes 100000 [--queries 40] [--compare DIR]

Ends with one line per size:
``size=<N> served=<k> us_p50_ms=<x> floor_p50_ms=<y> us_over_floor=<x/y>`` and the machine's load.
With ``--compare DIR`` (another checkout, e.g. the code before a change) a
second gunicorn serves the same database from DIR, and each query goes to
all three (this server, DIR's, the floor) in a rotating order; a line
``compare=DIR size=<N> …`` follows with DIR's figures against the same floor.
By default the servers run as one sync gunicorn worker and each request opens
its own connection (an agent calling once per task). ``--threads N`` runs them
as production does (gthread, N threads); ``--keep-alive`` sends every request
of a server over one kept connection (as the Python SDK's httpx client does
between calls close together; needs ``--threads``: a sync worker closes each).
``--parts`` adds the server's own split of each retrieval (token statement,
embedding, search, the rest, and the log written after the answer) as p50s,
from an in-process run through the real WSGI handler after the HTTP rounds
(no effect on the figures above). Every answer over HTTP is asserted to have
been logged.
"""

from __future__ import annotations

import argparse
import itertools
import json
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import KeptConnection, floor_search, load_note, retrievals_logged, setup_django, start_server, stop_server
from compare_reasoning_bank import CENTRE_TEXTS, K, _post
from retrieval import QUERY_TEXTS, _reset_and_load

PARTS = (
    ("token", "accounts.tokens.auth", "api_token_for_secret"),
    ("token", "accounts.tokens.auth", "api_token_hit"),
    ("embed", "memories.serving.preview", "embed_text"),
)


def server_parts(bank, secret: str, texts: list[str], floor) -> str:
    """p50 ms of each part of POST /api/v1/retrieve run in this process through
    the real WSGI handler, with the floor interleaved, each going first in
    turn: the functions of PARTS timed where the view calls them (``token``:
    its statements and Python), ``sql``: the other statements before the answer
    (the search), from sending each to its rows (``other_statements``: how
    many); ``rest``: Django, django-ninja, middleware and the services' own
    Python; ``after_answer``: what runs once the response is closed (nothing
    here; the log of a tree that writes it after its answer),
    outside ``total``."""
    import importlib
    import io

    from django.core.handlers.wsgi import WSGIHandler
    from django.db import connection

    handler = WSGIHandler()
    spent: dict[str, float] = {}

    inside: list[str] = []  # the part being timed, if any

    def timed(label, function):
        def wrapper(*args, **kwargs):
            started = time.perf_counter()
            inside.append(label)
            try:
                return function(*args, **kwargs)
            finally:
                inside.pop()
                spent[label] = spent.get(label, 0.0) + (time.perf_counter() - started) * 1000

        return wrapper

    originals = []
    for label, module_name, name in PARTS:
        module = importlib.import_module(module_name)
        originals.append((module, name, getattr(module, name)))
        setattr(module, name, timed(label, getattr(module, name)))

    def post(text: str) -> float:
        body = json.dumps({"query": text, "k": K}).encode()
        environ = {
            "REQUEST_METHOD": "POST",
            "PATH_INFO": "/api/v1/retrieve",
            "SERVER_NAME": "127.0.0.1",
            "SERVER_PORT": "80",
            "HTTP_HOST": "127.0.0.1",
            "REMOTE_ADDR": "127.0.0.1",
            "CONTENT_TYPE": "application/json",
            "CONTENT_LENGTH": str(len(body)),
            "HTTP_AUTHORIZATION": f"Bearer {secret}",
            "wsgi.input": io.BytesIO(body),
            "wsgi.url_scheme": "http",
            "wsgi.errors": sys.stderr,
        }
        status: list[str] = []
        started = time.perf_counter()
        response = handler(environ, lambda s, headers: status.append(s))
        answer = b"".join(response)
        elapsed = (time.perf_counter() - started) * 1000
        answered = dict(spent)
        closed = time.perf_counter()
        response.close()  # as a WSGI server does once the answer is sent: the log is written then
        spent.clear()
        spent.update(answered, after_answer=(time.perf_counter() - closed) * 1000)
        assert status[0].startswith("200"), answer
        assert len(json.loads(answer)["items"]) == K, answer
        return elapsed

    def sql_timed(execute, sql, params, many, context):
        started = time.perf_counter()
        try:
            return execute(sql, params, many, context)
        finally:
            if "token" not in inside:  # not the token's own statement
                spent["sql"] = spent.get("sql", 0.0) + (time.perf_counter() - started) * 1000
                spent["statements"] = spent.get("statements", 0) + 1

    rows: dict[str, list[float]] = {}
    statements: list[int] = []
    connection.execute_wrappers.append(sql_timed)
    try:
        for text in texts[:3]:
            post(text)
        for i, text in enumerate(texts):
            floor_ms = floor(text) if i % 2 else None
            spent.clear()
            total = post(text)
            part = dict(spent)
            if floor_ms is None:
                floor_ms = floor(text)
            labels = [label for label, *_ in PARTS] + ["sql"]
            for label in labels:
                rows.setdefault(label, []).append(part.get(label, 0.0))
            rows.setdefault("rest", []).append(total - sum(part.get(label, 0.0) for label in labels))
            rows.setdefault("after_answer", []).append(part["after_answer"])
            rows.setdefault("total", []).append(total)
            rows.setdefault("floor", []).append(floor_ms)
            statements.append(int(part.get("statements", 0)))
    finally:
        connection.execute_wrappers.remove(sql_timed)
        for module, name, function in originals:
            setattr(module, name, function)
    p50s = " ".join(f"{label}_p50_ms={statistics.median(values):.2f}" for label, values in rows.items())
    return f"{p50s} other_statements={statistics.median(statements):g}"


def run(
    sizes: list[int],
    queries: int,
    port: int | None,
    compare: Path | None = None,
    threads: int = 1,
    keep_alive: bool = False,
    parts: bool = False,
) -> None:
    setup_django()
    from memories.embedding.model import embed_texts

    rng = np.random.default_rng(7)
    centres = embed_texts(CENTRE_TEXTS)
    texts = [QUERY_TEXTS[i % len(QUERY_TEXTS)] + f" (#{i})" for i in range(queries)]
    proc, base = start_server(port=port, threads=threads)
    other_proc, other_base = start_server(root=compare, threads=threads) if compare else (None, None)
    try:
        for n in sizes:
            data = _reset_and_load(n, rng, centres, kind="text", reuse=True)
            bank, secret = data["bank"], data["secret"]

            def floor(text: str, bank=bank) -> float:
                return floor_search(bank, text, K)[0]

            if keep_alive:
                kept = {name: KeptConnection(b) for name, b in (("us", base), ("compare", other_base)) if b}
                sides = {
                    "us": lambda text, secret=secret, kept=kept: kept["us"].retrieve(secret, text, K),
                    "floor": floor,
                    **(
                        {"compare": lambda text, secret=secret, kept=kept: kept["compare"].retrieve(secret, text, K)}
                        if compare
                        else {}
                    ),
                }
            else:
                sides = {
                    "us": lambda text, secret=secret: _post(base, secret, text),
                    "floor": floor,
                    **({"compare": lambda text, secret=secret: _post(other_base, secret, text)} if other_base else {}),
                }
            from memories.serving.models import RetrievalEvent

            logged_before = RetrievalEvent.objects.filter(bank=bank).count()
            for text in texts[:3]:  # warm them all
                for measure in sides.values():
                    measure(text)
            times: dict[str, list[float]] = {name: [] for name in sides}
            # Every order in turn: each side goes first, and follows each other side, as often as the others
            # (a rotation of one order would have one server follow the in-process floor, warm, twice as often).
            orders = list(itertools.permutations(sides))
            for i, text in enumerate(texts):
                for name in orders[i % len(orders)]:
                    times[name].append(sides[name](text))
            # Every answer over HTTP was logged (after its answer): the servers did a user's whole request.
            http_sides = len(sides) - 1
            retrievals_logged(bank, logged_before, http_sides * (3 + len(texts)))
            p50 = {name: statistics.median(values) for name, values in times.items()}
            u, f = p50["us"], p50["floor"]
            how = f"threads={threads} keep_alive={int(keep_alive)}"
            print(
                f"size={n} served={K} us_p50_ms={u:.1f} floor_p50_ms={f:.1f} us_over_floor={u / f:.2f} {how} "
                f"{load_note()}",
                flush=True,
            )
            if compare:
                c = p50["compare"]
                print(
                    f"compare={compare} size={n} served={K} us_p50_ms={c:.1f} floor_p50_ms={f:.1f} "
                    f"us_over_floor={c / f:.2f} {how} {load_note()}",
                    flush=True,
                )
            if parts:
                print(f"parts size={n} " + server_parts(bank, secret, texts, floor) + f" {load_note()}", flush=True)
    finally:
        stop_server(proc)
        if other_proc:
            stop_server(other_proc)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="100000", help="comma-separated item counts")
    parser.add_argument("--queries", type=int, default=40, help="queries per size, each sent to both")
    parser.add_argument("--port", type=int, default=None, help="the web server's loopback port (default: a free one)")
    parser.add_argument(
        "--compare",
        type=Path,
        default=None,
        help="another checkout served side by side (e.g. the code before a change)",
    )
    parser.add_argument("--threads", type=int, default=1, help="gunicorn threads per server (gthread when > 1)")
    parser.add_argument("--keep-alive", action="store_true", help="one kept connection per server (needs --threads)")
    parser.add_argument("--parts", action="store_true", help="also the server's in-process split of a retrieval")
    args = parser.parse_args()
    if args.keep_alive and args.threads < 2:
        parser.error("--keep-alive needs --threads 2 or more (a sync worker closes every connection)")
    run(
        [int(s) for s in args.sizes.split(",")],
        args.queries,
        args.port,
        args.compare,
        threads=args.threads,
        keep_alive=args.keep_alive,
        parts=args.parts,
    )


if __name__ == "__main__":
    main()
