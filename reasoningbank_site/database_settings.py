"""The database settings: PostgreSQL with pgvector everywhere (DATABASE_URL's server, or the embedded one), and
the optional read replica (DATABASE_REPLICA_URL adds the ``replica`` entry of DATABASES, and the router of
reasoningbank_site/replica.py is installed). Imports nothing of Django's database layer: the settings load it."""

from __future__ import annotations

import math
from pathlib import Path

from reasoningbank_site import embedded
from reasoningbank_site.env import envint, envstr


def primary_database(data_dir: Path) -> tuple[dict, bool]:
    """DATABASES' ``default`` entry, and whether it is the embedded server."""
    url = envstr("DATABASE_URL")
    if url:
        import dj_database_url

        # Health checks: a persistent connection broken by a database restart is replaced, not reused into a 503.
        database = dj_database_url.parse(url, conn_max_age=envint("DB_CONN_MAX_AGE", 60), conn_health_checks=True)
        if database["ENGINE"] == "django.db.backends.postgresql":
            database["ENGINE"] = "reasoningbank_site.postgres"  # the health check without a round trip
        embedded_server = False
    else:
        host, port = embedded.postgres_address(data_dir)
        database = {
            # Django's PostgreSQL backend whose health check costs no round trip (reasoningbank_site/postgres).
            "ENGINE": "reasoningbank_site.postgres",
            "NAME": embedded.DB_NAME,
            "USER": "postgres",
            "HOST": host,
            "PORT": port,
            # Persistent connections here too (a new connection per request would add its setup to every
            # retrieval); the health check replaces one broken by a restart of the embedded server.
            "CONN_MAX_AGE": envint("DB_CONN_MAX_AGE", 60),
            "CONN_HEALTH_CHECKS": True,
        }
        embedded_server = True
    # Lets a test-spawned worker process use the test database pytest created.
    if envstr("RB_DATABASE_NAME"):
        database["NAME"] = envstr("RB_DATABASE_NAME")
    return database, embedded_server


def replica_database(url: str) -> dict:
    import dj_database_url

    database = dj_database_url.parse(url, conn_max_age=envint("DB_CONN_MAX_AGE", 60), conn_health_checks=True)
    if database["ENGINE"] == "django.db.backends.postgresql":
        database["ENGINE"] = "reasoningbank_site.postgres"  # the health check without a round trip
    # A replica that does not answer costs a report this long once; then the primary serves the reports.
    database.setdefault("OPTIONS", {}).setdefault("connect_timeout", envint("RB_REPLICA_CONNECT_TIMEOUT", 3))
    database["TEST"] = {"MIRROR": "default"}  # tests run against one database: the replica is the primary
    return database


def with_replica(databases: dict) -> tuple[dict, list[str]]:
    """DATABASES with the replica's entry when DATABASE_REPLICA_URL is set, and DATABASE_ROUTERS."""
    url = envstr("DATABASE_REPLICA_URL")
    return ({**databases, "replica": replica_database(url)} if url else databases), [
        "reasoningbank_site.replica.ReplicaRouter"
    ]


def replica_max_lag() -> float:
    """``RB_REPLICA_MAX_LAG_SECONDS``: how far behind (replica_status's lag) the replica may be before the reports
    read from the primary; 60 by default, 0 when the check is off ("0" or "off")."""
    value = envstr("RB_REPLICA_MAX_LAG_SECONDS").strip().lower()
    if value == "":
        return 60.0
    if value == "off":
        return 0.0
    try:
        seconds = float(value)
    except ValueError:
        seconds = math.nan
    if not (math.isfinite(seconds) and seconds >= 0):
        from django.core.exceptions import ImproperlyConfigured

        raise ImproperlyConfigured(
            f'RB_REPLICA_MAX_LAG_SECONDS must be a number of seconds (0 or "off" to turn the check off), not {value!r}'
        )
    return seconds
