"""The read replica's settings: DATABASE_REPLICA_URL adds the ``replica`` entry of DATABASES, and the router
(reasoningbank_site/replica.py) is installed. Imports nothing of Django's database layer: the settings load it."""

from __future__ import annotations

from reasoningbank_site.env import envint, envstr


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
