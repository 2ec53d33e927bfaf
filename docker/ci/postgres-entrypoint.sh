#!/bin/sh
# The official postgres image's start, in short: initdb on an empty data directory, create the
# database and its owner, then run postgres in the foreground (PGPORT chooses the port).
set -eu
if [ ! -s "$PGDATA/PG_VERSION" ]; then
  printf '%s\n' "${POSTGRES_PASSWORD:?POSTGRES_PASSWORD is not set}" > /tmp/pwfile
  initdb -D "$PGDATA" -U "${POSTGRES_USER:-postgres}" --pwfile=/tmp/pwfile --auth-local=trust --auth-host=scram-sha-256 -E UTF8 >/dev/null
  rm -f /tmp/pwfile
  pg_ctl -D "$PGDATA" -o "-c listen_addresses='' -k /var/run/postgresql" -w start >/dev/null
  if [ "${POSTGRES_DB:-postgres}" != "postgres" ]; then
    psql -h /var/run/postgresql -U "${POSTGRES_USER:-postgres}" -d postgres -v ON_ERROR_STOP=1 \
      -c "CREATE DATABASE \"$POSTGRES_DB\""
  fi
  pg_ctl -D "$PGDATA" -m fast -w stop >/dev/null
fi
exec postgres -D "$PGDATA" -k /var/run/postgresql -c listen_addresses="${POSTGRES_LISTEN:-*}" "$@"
