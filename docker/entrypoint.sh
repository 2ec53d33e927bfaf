#!/bin/sh
# One image, several roles:
#   migrate apply the migrations, then exit (compose runs it once, before web and workers start)
#   web     gunicorn on :8000 (WEB_CONCURRENCY processes × WEB_THREADS threads of its stock gthread worker:
#           the threads overlap the requests' database and broker waits and share their process's embedding
#           model; each keeps one database connection, so processes × threads bounds the web's connections);
#           with RB_MIGRATE_ON_START=1 it migrates first (a single-container run)
#   worker  a Celery worker on the queues in WORKER_QUEUES (unset: every queue), WORKER_POOL (prefork) and
#           WORKER_CONCURRENCY (2): compose and the manifests run one for the pipeline (celery,maintenance),
#           one for webhook deliveries (webhooks, threads) and one for bulk work (bulk); scale each on its own
#   beat    the Celery beat scheduler (run exactly one)
#   mcp     the MCP server (streamable HTTP on :8001), forwarding tool calls to RB_MCP_API_URL
#   manage  ARGS...   any manage.py command, e.g. `manage createsuperuser`, `manage rb_token create --bank demo/web-agent`
#   anything else is executed as is.
set -eu

role="${1:-web}"
[ "$#" -gt 0 ] && shift

# A production container is configured by its environment alone: without these it would quietly make up a
# per-container key and start an embedded database inside a throwaway filesystem. Stop with one line instead.
case "$role" in
  migrate|web|worker|beat|mcp|manage)
    for name in SECRET_KEY DATABASE_URL; do
      eval "value=\${$name:-}"
      if [ -z "$value" ]; then
        echo "reasoningbank: $name is not set; a production container needs SECRET_KEY and DATABASE_URL in its environment (docs/production.md)" >&2
        exit 78
      fi
    done
    ;;
esac

case "$role" in
  migrate)
    # A fresh deploy starts the shared Prometheus sums from zero (dead processes' files would linger).
    if [ -n "${PROMETHEUS_MULTIPROC_DIR:-}" ] && [ -d "$PROMETHEUS_MULTIPROC_DIR" ]; then
      find "$PROMETHEUS_MULTIPROC_DIR" -maxdepth 1 -name '*.db' -delete
    fi
    exec python manage.py migrate --noinput "$@"
    ;;
  web)
    # Several replicas must not race to migrate: the compose file's one-shot `migrate` service does it.
    if [ "${RB_MIGRATE_ON_START:-0}" = "1" ]; then
      python manage.py migrate --noinput
    fi
    exec gunicorn reasoningbank_site.wsgi:application \
      --bind "0.0.0.0:${PORT:-8000}" \
      --workers "${WEB_CONCURRENCY:-2}" \
      --threads "${WEB_THREADS:-4}" \
      --worker-class gthread \
      --timeout "${GUNICORN_TIMEOUT:-60}" \
      --forwarded-allow-ips "${FORWARDED_ALLOW_IPS:-127.0.0.1}" \
      --access-logfile - \
      "$@"
    ;;
  worker)
    # Unset, WORKER_QUEUES adds nothing: the worker consumes every queue.
    exec celery -A reasoningbank_site worker \
      --loglevel "${LOG_LEVEL:-INFO}" \
      --concurrency "${WORKER_CONCURRENCY:-2}" \
      --pool "${WORKER_POOL:-prefork}" \
      ${WORKER_QUEUES:+--queues "$WORKER_QUEUES"} \
      "$@"
    ;;
  beat)
    exec celery -A reasoningbank_site beat \
      --loglevel "${LOG_LEVEL:-INFO}" \
      --schedule "${RB_DATA_DIR:-/data}/celerybeat-schedule" \
      "$@"
    ;;
  mcp)
    exec python manage.py rb_mcp --host 0.0.0.0 --port "${RB_MCP_PORT:-8001}" "$@"
    ;;
  manage)
    exec python manage.py "$@"
    ;;
  *)
    exec "$role" "$@"
    ;;
esac
