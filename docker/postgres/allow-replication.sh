#!/bin/sh
# Run once by the PostgreSQL image when it creates a new database: lets the `replica` profile's standby
# (docker/compose.yaml) stream from this server, with the same password as the app.
set -e
echo "host replication ${POSTGRES_USER} all scram-sha-256" >> "$PGDATA/pg_hba.conf"
