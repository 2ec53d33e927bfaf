"""One bank at two sizes, side by side: every reviewer page, retrieval against
its floor, a batch ingest, the exports, a backup, the retention purge and the
HNSW build, measured at ``--sizes`` (default 100k and 1M trajectories) in one
run, interleaved (small, large, small, large ...), each request asserted to
serve what a user's would. Prints ``what | small | large | ratio | bar | pass``
and the tables' weight per 100k trajectories.

Each size has its own database on the configured server
(``rb_bench_scale_<size>``), built by scale_seed.py (COPY; see there what it
holds), KEPT between runs and migrated on each one, so a run after the first
measures at once; a seed that stopped half-way resumes.

    RB_DATA_DIR=/tmp/rb-scale .venv/bin/python bench/scale.py [--sizes 100000,1000000] [--runs 5] [--seed-only]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
os.environ.setdefault("RB_BENCH_DB", "rb_bench_scale")
import common

BASE_DB = os.environ["RB_BENCH_DB"]  # common.BENCH_DB follows use_db

# Bars: a reviewer page at the large size within 1.5x its time at the small one; retrieval within 1.6x
# the floor at the large size; the purge's time per row within 1.2x; no index bigger after a purge.
PAGE_BAR = 1.5
RETRIEVAL_BAR = 1.6
PURGE_BAR = 1.2
BIG_TABLES = (
    "trajectories_trajectory",
    "trajectories_rawrecord",
    "trajectories_judgment",
    "memories_retrievalevent",
    "memories_retrievaltally",
    "memories_memoryitem",
    "memories_memoryitemversion",
)


def db_name(n: int) -> str:
    return f"{BASE_DB}_{n}"


def use_db(n: int) -> None:
    """Point this process's Django connection (and the servers common.start_server starts) at size ``n``'s database,
    created and migrated."""
    from django.conf import settings
    from django.core.management import call_command
    from django.db import connection

    name = db_name(n)
    connection.close()
    settings.DATABASES["default"]["NAME"] = name
    connection.settings_dict["NAME"] = name
    common.BENCH_DB = name
    os.environ["RB_DATABASE_NAME"] = name
    common._create_database()
    call_command("migrate", verbosity=0)


def seed_all(sizes: list[int], other_banks: int) -> dict[int, dict[str, float]]:
    import scale_seed

    out = {}
    for n in sizes:
        use_db(n)
        started = time.perf_counter()
        out[n] = scale_seed.seed(n, other_banks)
        scale_seed.log(f"size {n:,}: seeded ({time.perf_counter() - started:.0f} s this run)")
    return out


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="100000,1000000", help="two trajectory counts, small first")
    parser.add_argument("--runs", type=int, default=5, help="requests per page and size")
    parser.add_argument("--other-banks", type=int, default=20, help="small banks beside the measured one")
    parser.add_argument(
        "--whole-exports", action="store_true", help="also download each export whole (at 1M: many minutes)"
    )
    parser.add_argument("--seed-only", action="store_true", help="build the databases and stop")
    parser.add_argument(
        "--no-hnsw", action="store_true", help="skip rebuilding the HNSW index (at 1M: many minutes; seeding times it)"
    )
    args = parser.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",")]
    import django

    django.setup()
    seeded = seed_all(sizes, args.other_banks)
    if args.seed_only:
        for n, parts in seeded.items():
            print(f"{n:,}: " + ", ".join(f"{k} {v:.0f} s" for k, v in parts.items()))
        return {"seeded": seeded}
    import scale_measure

    return scale_measure.measure(sizes, args.runs, seeded, use_db, args.whole_exports, hnsw=not args.no_hnsw)


if __name__ == "__main__":
    main()
