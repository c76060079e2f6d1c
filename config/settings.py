"""One settings module, driven by the environment, with embedded defaults.

Without any environment the platform runs on a SQLite file and a Celery broker stored in another
SQLite file (kombu's SQLAlchemy transport): a real worker process, no server to install. Setting
`DATABASE_URL=postgres://…` and `CELERY_BROKER_URL=redis://…` moves the same code onto
PostgreSQL and Redis. Every variable is documented in `.env.example` and the README.
"""

import os
from datetime import timedelta
from pathlib import Path

import environ
from django.core.exceptions import ImproperlyConfigured

from config.env import BROKER_SCHEMES, RESULT_SCHEMES, STREAMS_SCHEMES, StrictEnv

BASE_DIR = Path(__file__).resolve().parent.parent

# Strict: a boolean, number or URL that does not parse stops start-up naming its variable
# (config/env.py); django-environ alone reads an unknown boolean as false.
env = StrictEnv()
# A `.env` file is optional; the real environment always wins.
environ.Env.read_env(BASE_DIR / ".env", overwrite=False)

VAR_DIR = Path(env.str("PLATFORM_VAR_DIR", default=str(BASE_DIR / "var")))
VAR_DIR.mkdir(parents=True, exist_ok=True)

DEBUG = env.bool("DEBUG", default=False)
_DEV_SECRET = "insecure-dev-key-only-for-debug-and-tests"
SECRET_KEY = env.str("SECRET_KEY", default=_DEV_SECRET if DEBUG else "")
if not SECRET_KEY:
    raise ImproperlyConfigured(
        "SECRET_KEY must be set when DEBUG is off (e.g. export SECRET_KEY=$(openssl rand -hex 32))."
    )
ALLOWED_HOSTS = env.list("ALLOWED_HOSTS", default=["127.0.0.1", "localhost", "[::1]", "testserver"])
CSRF_TRUSTED_ORIGINS = env.list("CSRF_TRUSTED_ORIGINS", default=[])

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "whitenoise.runserver_nostatic",
    "django.contrib.staticfiles",
    "rest_framework",
    "rest_framework.authtoken",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "django_filters",
    "django_htmx",
    "template_partials",
    "axes",
    "csp",
    "core",
    "chat",
    "annotation",
    "metrics",
    "judges",
    "workspace",
]

# Django's own middleware as `core.loop_middleware` subclasses: the same hooks, run on the event
# loop under ASGI instead of a thread hop each (see that module).
MIDDLEWARE = [
    "core.loop_middleware.SecurityMiddleware",
    "core.loop_middleware.CSPMiddleware",
    "core.middleware.AsyncWhiteNoiseMiddleware",  # WhiteNoise, without leaving the loop
    "core.loop_middleware.SessionMiddleware",
    "core.loop_middleware.LocaleMiddleware",
    # Before anything that reads the form: a large body is parsed off the event loop.
    "core.loop_middleware.ParseBodyOffTheLoop",
    # After LocaleMiddleware (its refusal reads in the user's language), before anything that
    # puts the path or the form into a query (a campaign's language).
    "core.middleware.RejectUnstorableInput",
    # After LocaleMiddleware: a campaign may fix its crowdworker pages' language.
    "chat.middleware.CampaignLanguageMiddleware",
    "core.loop_middleware.CommonMiddleware",
    "core.loop_middleware.CsrfViewMiddleware",
    "core.loop_middleware.AuthenticationMiddleware",
    # After authentication: a researcher's queries see only the current workspace.
    "core.middleware.WorkspaceMiddleware",
    "core.loop_middleware.MessageMiddleware",
    "core.loop_middleware.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    # Last: turns a login refused for too many failures into the lockout page / 429.
    "axes.middleware.AxesMiddleware",
]

# Django's checks for its security, clickjacking and CSRF middleware look for their dotted paths;
# `core.checks` runs them against the subclasses above and reports a missing one itself.
SILENCED_SYSTEM_CHECKS = ["security.W001", "security.W002", "security.W003"]

ROOT_URLCONF = "config.urls"
WSGI_APPLICATION = "config.wsgi.application"
ASGI_APPLICATION = "config.asgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.template.context_processors.i18n",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "core.context_processors.navigation",
                "core.context_processors.workspaces",
            ],
            # {% colon %}, {% lparen %}… between translated pieces: full-width in zh/ja only.
            "builtins": ["core.templatetags.punctuation"],
        },
    }
]

# --- Database -----------------------------------------------------------------------------
DATABASES = {
    "default": env.db_url("DATABASE_URL", default=f"sqlite:///{VAR_DIR / 'platform.sqlite3'}")
}
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # The web server and the worker write to the same file: wait for locks instead of failing,
    # take the write lock up front (no deadlock on upgrade) and let readers run beside a writer.
    DATABASES["default"].setdefault("OPTIONS", {}).update(
        {
            "timeout": 30,
            "transaction_mode": "IMMEDIATE",
            "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
        }
    )
    DATABASES["default"].setdefault("TEST", {})["NAME"] = str(VAR_DIR / "test-platform.sqlite3")
else:
    # Under ASGI each request runs in its own thread, so a persistent connection is rarely reused:
    # close it after the request, or share a psycopg pool (DATABASE_POOL_MAX_SIZE > 0), which
    # makes bursts of users wait for a connection instead of exhausting the server's limit.
    pool_size = env.int("DATABASE_POOL_MAX_SIZE", default=0)
    if pool_size > 0:
        DATABASES["default"].setdefault("OPTIONS", {})["pool"] = {
            "min_size": 1,
            "max_size": pool_size,
            "timeout": env.float("DATABASE_POOL_TIMEOUT", default=30.0),
        }
        DATABASES["default"]["CONN_MAX_AGE"] = 0
    else:
        DATABASES["default"].setdefault("CONN_MAX_AGE", env.int("CONN_MAX_AGE", default=0))
        DATABASES["default"]["CONN_HEALTH_CHECKS"] = True
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# --- Celery -------------------------------------------------------------------------------
CELERY_BROKER_URL = env.url_str(
    "CELERY_BROKER_URL",
    default=f"sqla+sqlite:///{VAR_DIR / 'celery-broker.sqlite3'}",
    schemes=BROKER_SCHEMES,
)
CELERY_RESULT_BACKEND = env.url_str(
    "CELERY_RESULT_BACKEND",
    default=(
        CELERY_BROKER_URL
        if CELERY_BROKER_URL.startswith("redis")
        else f"db+sqlite:///{VAR_DIR / 'celery-results.sqlite3'}"
    ),
    schemes=RESULT_SCHEMES,
)
CELERY_TASK_DEFAULT_QUEUE = "default"
# Queues: default, chat, metrics, gpu. Model-heavy work (neural metric chunks, discriminator
# training, follow-up item selection) goes to `gpu` when GPU_QUEUE is true — set it where a worker
# on a GPU machine consumes that queue (`celery -A config worker -Q gpu`) — else to `metrics`.
GPU_QUEUE = env.bool("GPU_QUEUE", default=False)
CELERY_TASK_ROUTES = {
    "chat.tasks.*": {"queue": "chat"},
    "metrics.tasks.*": {"queue": "metrics"},
}
CELERY_TASK_SERIALIZER = "json"
CELERY_RESULT_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_TASK_ACKS_LATE = True
# A task whose pool process died (killed, out of memory) goes back to the queue instead of being
# acknowledged as failed. Safe for every task here: each claims its job under a lease in the
# database and is idempotent, and a job that keeps killing its worker is failed by the sweeper
# after JOB_MAX_ATTEMPTS claims instead of being redelivered forever.
CELERY_TASK_REJECT_ON_WORKER_LOST = True
# With late acks, Redis hands a task out again when it has been unacknowledged for this long
# (kombu's default is 1 h; restored by a scan of the `unacked` index that every worker runs every
# 10 s). That is how a task a killed worker had received but not yet started comes back (decision
# 47): its job row was never claimed, so the job sweeper's lease check cannot see it. 80 s + the
# 10 s scan keeps the README's promise (a job is running again within 90 s of its worker dying)
# for that case too (issue 23 item 9). A task still running when it comes back is harmless: the
# second delivery finds its lease taken and does nothing (a long run sees one such every 80 s).
# Only for Redis: the embedded SQLAlchemy transport hands its options to create_engine().
CELERY_BROKER_TRANSPORT_OPTIONS = (
    {
        "visibility_timeout": env.int("CELERY_VISIBILITY_TIMEOUT", default=80),
        "unacked_restore_interval": 10,
        "unacked_restore_throttle": 1,
    }
    if CELERY_BROKER_URL.startswith(("redis://", "rediss://"))
    else {}
)
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
# The embedded (SQLAlchemy) broker sleeps this long after a poll that finds no message (kombu's
# default is 1 s, which a short metric run pays once per chunk); see config/broker.py.
EMBEDDED_BROKER_POLLING_INTERVAL = env.float("EMBEDDED_BROKER_POLLING_INTERVAL", default=0.1)
# Each worker process loads the MSDE 16 kernels' models when it starts, not on its first chunk.
METRICS_WORKER_WARMUP = env.bool("METRICS_WORKER_WARMUP", default=True)
# Without Redis, a chord's callback waits for `chord_unlock`, which re-checks every this often.
CELERY_RESULT_CHORD_RETRY_INTERVAL = env.float("CELERY_RESULT_CHORD_RETRY_INTERVAL", default=0.25)
CELERY_RESULT_EXPIRES = 3600
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
CELERY_TASK_ALWAYS_EAGER = False

# --- Background jobs: leases, heartbeats and the sweeper (core/jobs.py) ----------------------
# A worker renews its job's lease every JOB_HEARTBEAT_SECONDS; a lease not renewed for
# JOB_LEASE_SECONDS means the worker died, and the sweeper (Celery beat, every
# JOB_SWEEP_INTERVAL seconds) sends the job again. A job sent but never claimed for
# JOB_PENDING_TIMEOUT seconds (a lost message) is sent again; one claimed JOB_MAX_ATTEMPTS times
# without finishing fails with the reason. Worst case from a crash to the job running again:
# JOB_LEASE_SECONDS + JOB_SWEEP_INTERVAL (90 s by default) once a worker is free; a task a killed
# worker had received but not claimed comes back after CELERY_VISIBILITY_TIMEOUT + 10 s (Redis;
# 90 s by default too).
JOB_HEARTBEAT_SECONDS = env.float("JOB_HEARTBEAT_SECONDS", default=10.0)
JOB_LEASE_SECONDS = env.float("JOB_LEASE_SECONDS", default=60.0)
JOB_SWEEP_INTERVAL = env.float("JOB_SWEEP_INTERVAL", default=30.0)
JOB_PENDING_TIMEOUT = env.float("JOB_PENDING_TIMEOUT", default=15 * 60.0)
JOB_MAX_ATTEMPTS = env.int("JOB_MAX_ATTEMPTS", default=5)
if not 0 < JOB_HEARTBEAT_SECONDS < JOB_LEASE_SECONDS:
    raise ImproperlyConfigured(
        "JOB_HEARTBEAT_SECONDS must be positive and shorter than JOB_LEASE_SECONDS "
        f"(got {JOB_HEARTBEAT_SECONDS} and {JOB_LEASE_SECONDS})."
    )
# Rating jobs: overdue assignments are expired and their items given to other raters, and
# dialogues accepted since are assigned, every ASSIGNMENT_SWEEP_INTERVAL seconds, so work moves on
# even when no expert opens a page (experts' pages also do it when they fetch work).
ASSIGNMENT_SWEEP_INTERVAL = env.float("ASSIGNMENT_SWEEP_INTERVAL", default=300.0)
CELERY_BEAT_SCHEDULE = {
    "jobs-sweep": {
        "task": "core.jobs_sweep",
        "schedule": JOB_SWEEP_INTERVAL,
        # A sweep that waited longer than one interval is superseded by the next one.
        "options": {"queue": "default", "expires": JOB_SWEEP_INTERVAL},
    },
    "rating-assignments-sweep": {
        "task": "annotation.expire_overdue_assignments",
        "schedule": ASSIGNMENT_SWEEP_INTERVAL,
        "options": {"queue": "default", "expires": ASSIGNMENT_SWEEP_INTERVAL},
    },
}
CELERY_BEAT_SCHEDULE_FILENAME = str(VAR_DIR / "celerybeat-schedule")
# --- Live chat: where replies in flight live (see chat/services/reply_streams.py) ----------
# redis://… : shared streams; replies are generated by `manage.py chat_worker` processes and any
# web process relays any reply (several web processes, deploys and crashes lose nothing).
# memory:// : the embedded default, one web process generates and serves every reply from its
# own memory.
CHAT_REPLY_STREAMS_URL = env.url_str(
    "CHAT_REPLY_STREAMS_URL",
    default=CELERY_BROKER_URL
    if CELERY_BROKER_URL.startswith(("redis://", "rediss://"))
    else "memory://",
    schemes=STREAMS_SCHEMES,
)
# Prefix of the streams' keys: deployments (or test runs) sharing one Redis database keep apart.
CHAT_REPLY_KEY_PREFIX = env.str("CHAT_REPLY_KEY_PREFIX", default="chat")
# A generator's claim on an utterance lives this long unless renewed (renewed every third of it):
# a generator that died is replaced after at most this many seconds.
CHAT_CLAIM_TTL_S = env.float("CHAT_CLAIM_TTL_S", default=15.0)
# A reply queued for a `chat` worker is re-queued if no worker has started it after this long.
CHAT_DISPATCH_TTL_S = env.float("CHAT_DISPATCH_TTL_S", default=30.0)
# How long a finished reply's stream (and a failure, until retried) stays readable.
CHAT_STREAM_TTL_S = env.int("CHAT_STREAM_TTL_S", default=24 * 3600)
# A reply's chunks are appended to its stream at most this often (the first one at once): ten
# updates a second read as smooth typing, and each one is work for Redis, the relaying web process
# and the browser (40 ms cost ~2.5 times as many events per reply; docs/scaling.md).
CHAT_STREAM_BATCH_MS = env.int("CHAT_STREAM_BATCH_MS", default=100)
# Redis connections per process for the reply streams: a web process holds one per reply it is
# relaying, a chat worker one per reply it is writing; beyond it, a request waits for one.
CHAT_REDIS_MAX_CONNECTIONS = env.int("CHAT_REDIS_MAX_CONNECTIONS", default=2000)
# Threads (each with its own kept-open database connection) that run the chat views' queries.
CHAT_DB_THREADS = env.int("CHAT_DB_THREADS", default=8)
# `manage.py chat_worker` (chat/services/reply_worker.py): replies generated at once per worker,
# how often it tells Redis it is alive, and how long a stopping worker lets replies finish.
CHAT_WORKER_CONCURRENCY = env.int("CHAT_WORKER_CONCURRENCY", default=100)
CHAT_WORKER_HEARTBEAT_S = env.float("CHAT_WORKER_HEARTBEAT_S", default=5.0)
CHAT_WORKER_GRACE_S = env.float("CHAT_WORKER_GRACE_S", default=30.0)
# How long a thread may hold the GIL while another waits for it, in the web processes and chat
# workers (CPython's default: 5 ms). Their event loop relays replies while the database threads
# run ORM code; at 5 ms every hand-off between them could wait that long, and a turn makes
# several: 1 ms halved the tail of the chat's latencies (docs/scaling.md).
GIL_SWITCH_INTERVAL_MS = env.float("GIL_SWITCH_INTERVAL_MS", default=1.0)

# Seconds /healthz waits for a worker to answer its ping task.
HEALTH_WORKER_TIMEOUT = env.float("HEALTH_WORKER_TIMEOUT", default=5.0)
# Seconds /healthz reuses the worker check's answer (a ping round trip is too slow to make on
# every poll of a load balancer); 0 pings on every request.
HEALTH_WORKER_CHECK_MAX_AGE = env.float("HEALTH_WORKER_CHECK_MAX_AGE", default=15.0)

# --- Auth, i18n ---------------------------------------------------------------------------
# django-axes counts failed logins (login page, admin, POST /api/token/) per account and per
# client IP: LOGIN_FAILURE_LIMIT failures lock that account, or that IP, for LOGIN_LOCKOUT_MINUTES
# (a success resets the count). Behind a reverse proxy, set TRUSTED_PROXY_COUNT so the client IP
# is read from X-Forwarded-For (otherwise every client would share the proxy's address).
# Axes' backend only refuses locked-out logins; ModelBackend then checks the password.
AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",
    "django.contrib.auth.backends.ModelBackend",
]
AXES_FAILURE_LIMIT = env.int("LOGIN_FAILURE_LIMIT", default=10)
AXES_COOLOFF_TIME = timedelta(minutes=env.float("LOGIN_LOCKOUT_MINUTES", default=15))
AXES_LOCKOUT_PARAMETERS = ["username", "ip_address"]
AXES_RESET_ON_SUCCESS = True
AXES_LOCKOUT_CALLABLE = "core.security.lockout_response"
AXES_CLIENT_IP_CALLABLE = "core.security.client_ip"
AXES_VERBOSE = False
TRUSTED_PROXY_COUNT = env.int("TRUSTED_PROXY_COUNT", default=0)
# Addresses whose X-Forwarded-For / X-Forwarded-Proto the web server (uvicorn, started by
# `python -m config.serve`) believes, comma-separated: your reverse proxy's. Empty (the default):
# nobody's, so a local client cannot choose the address it appears to come from (uvicorn's own
# default trusts 127.0.0.1).
FORWARDED_ALLOW_IPS = env.list("FORWARDED_ALLOW_IPS", default=[])

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
]
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "home"
LOGOUT_REDIRECT_URL = "login"

LANGUAGE_CODE = env.str("LANGUAGE_CODE", default="zh-hans")
# Each language is named in its own script (endonyms), as language pickers conventionally do.
LANGUAGES = [("zh-hans", "简体中文"), ("en", "English"), ("ja", "日本語")]
LOCALE_PATHS = [BASE_DIR / "locale"]
TIME_ZONE = env.str("TIME_ZONE", default="Asia/Shanghai")
USE_I18N = True
USE_TZ = True

# --- Static & uploads ---------------------------------------------------------------------
STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = VAR_DIR / "static"
STATIC_ROOT.mkdir(exist_ok=True)
# Serve straight from the source folders too, so the embedded mode needs no collectstatic step.
WHITENOISE_USE_FINDERS = True
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
}
# Dataset uploads larger than this are refused with a clear message (bytes).
DATASET_UPLOAD_MAX_BYTES = env.int("DATASET_UPLOAD_MAX_BYTES", default=200 * 1024 * 1024)
# Per line of an imported JSON Lines file, and per text field in it (a context turn, a
# reference, a grounding value): longer ones are refused with the line and field named.
IMPORT_MAX_LINE_BYTES = env.int("IMPORT_MAX_LINE_BYTES", default=4 * 1024 * 1024)
IMPORT_MAX_TEXT_CHARS = env.int("IMPORT_MAX_TEXT_CHARS", default=100_000)
# Keep uploads on disk rather than in memory, so big datasets stream.
FILE_UPLOAD_MAX_MEMORY_SIZE = 2 * 1024 * 1024
DATA_UPLOAD_MAX_MEMORY_SIZE = 10 * 1024 * 1024

# --- REST API -----------------------------------------------------------------------------
REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "rest_framework.authentication.TokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["core.access.IsResearcher"],
    "DEFAULT_PAGINATION_CLASS": "rest_framework.pagination.PageNumberPagination",
    "PAGE_SIZE": 50,
    "DEFAULT_FILTER_BACKENDS": ["django_filters.rest_framework.DjangoFilterBackend"],
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "DEFAULT_PARSER_CLASSES": [
        "core.parsers.SafeJSONParser",
        "rest_framework.parsers.FormParser",
        "rest_framework.parsers.MultiPartParser",
    ],
    # A ServiceError raised by a service answers 400 with one body shape (core/errors.py).
    "EXCEPTION_HANDLER": "core.api.exception_handler",
}

# --- Running in public: transport security, cookies, CSP, caches ----------------------------
# On by default whenever DEBUG is off; each can be turned off (e.g. SECURE_SSL_REDIRECT when a
# proxy already redirects). Behind a TLS-terminating proxy set SECURE_PROXY_SSL_HEADER=true so
# Django trusts its X-Forwarded-Proto header (only if the proxy overwrites that header).
# SITE_HTTPS=false: served over plain HTTP on this machine (`make demo` on 127.0.0.1 sets it);
# a public deployment leaves it on.
_PUBLIC = env.bool("SITE_HTTPS", default=not DEBUG)
SECURE_SSL_REDIRECT = env.bool("SECURE_SSL_REDIRECT", default=_PUBLIC)
SECURE_REDIRECT_EXEMPT = [r"^healthz$"]  # the container health check speaks plain HTTP
SESSION_COOKIE_SECURE = env.bool("SESSION_COOKIE_SECURE", default=_PUBLIC)
CSRF_COOKIE_SECURE = env.bool("CSRF_COOKIE_SECURE", default=_PUBLIC)
SESSION_COOKIE_HTTPONLY = True
SESSION_COOKIE_SAMESITE = "Lax"
SECURE_HSTS_SECONDS = env.int("SECURE_HSTS_SECONDS", default=31536000 if _PUBLIC else 0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = env.bool("SECURE_HSTS_INCLUDE_SUBDOMAINS", default=_PUBLIC)
# The `preload` directive only makes the site eligible for browsers' preload lists; nothing is
# submitted anywhere unless the operator does it.
SECURE_HSTS_PRELOAD = env.bool("SECURE_HSTS_PRELOAD", default=_PUBLIC)
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
X_FRAME_OPTIONS = "DENY"
if env.bool("SECURE_PROXY_SSL_HEADER", default=False):
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
# Researchers' and experts' sessions last SESSION_COOKIE_AGE (2 weeks by default); a
# crowdworker's session ends after its campaign's `session_hours` (chat.services.participation).
SESSION_COOKIE_AGE = env.int("SESSION_COOKIE_AGE", default=14 * 24 * 3600)

# Content Security Policy (django-csp): scripts only from this site (no inline scripts, no
# eval: htmx runs with allowEval off), no plugins, no framing. Inline style attributes stay
# allowed (progress bars); model output is always escaped text, never markup.
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": ["'self'"],
        "script-src": ["'self'"],
        "style-src": ["'self'", "'unsafe-inline'"],
        "img-src": ["'self'", "data:"],
        "font-src": ["'self'", "data:"],
        "connect-src": ["'self'"],
        "object-src": ["'none'"],
        "base-uri": ["'self'"],
        "frame-ancestors": ["'none'"],
    }
}

# Rate limits (login lockout above) and other shared counters. One process: memory; several web
# processes: a shared cache, e.g. CACHE_URL=redis://host:6379/2.
CACHES = {"default": env.cache_url("CACHE_URL", default="locmemcache://")}
# Sessions stay in the database; with a shared cache (Redis) they are read through it: a cache
# GET instead of a query on every request (the chat's hot path, docs/scaling.md), and a flushed
# cache signs nobody out. A per-process memory cache could serve one process a session that
# another has ended (a logout): then the database alone.
SESSION_ENGINE = (
    "django.contrib.sessions.backends.db"
    if CACHES["default"]["BACKEND"].endswith(("LocMemCache", "DummyCache"))
    else "django.contrib.sessions.backends.cached_db"
)

# --- Faults that heal, cancels that end, a missing chat worker (issue 23) ----------------
# A worker on a job checks every this many seconds that it was not cancelled (between its lease
# renewals), and abandons a model call in flight when it was.
JOB_CANCEL_CHECK_SECONDS = env.float("JOB_CANCEL_CHECK_SECONDS", default=2.0)
# A reply queued for the `chat` workers that none has taken after this long fails with "no
# worker" and a retry (shorter than CHAT_DISPATCH_TTL_S, when the queued job is given up).
CHAT_UNCLAIMED_TIMEOUT_S = env.float("CHAT_UNCLAIMED_TIMEOUT_S", default=15.0)
# Replies waiting for a `chat` worker at most; past it a reply fails at once with "busy".
CHAT_REPLY_QUEUE_MAX = env.int("CHAT_REPLY_QUEUE_MAX", default=5000)
# A pooled Redis connection idle this long is checked (PING) before use, and a command that
# hits a dropped connection is tried once more on a new one (a Redis restart heals by itself).
REDIS_HEALTH_CHECK_INTERVAL_S = env.int("REDIS_HEALTH_CHECK_INTERVAL_S", default=5)
# A reply whose save failed on a database error (PostgreSQL restarting) is saved again this many
# times, waiting 0.5 s, 1 s, 2 s, … in between, before it fails with a retry for the worker.
CHAT_SAVE_ATTEMPTS = env.int("CHAT_SAVE_ATTEMPTS", default=6)
if not 0 < CHAT_UNCLAIMED_TIMEOUT_S < CHAT_DISPATCH_TTL_S:
    raise ImproperlyConfigured(
        "CHAT_UNCLAIMED_TIMEOUT_S must be positive and shorter than CHAT_DISPATCH_TTL_S "
        f"(got {CHAT_UNCLAIMED_TIMEOUT_S} and {CHAT_DISPATCH_TTL_S})."
    )

# Invite links: joins per client IP per minute (a crowd behind one NAT joins within the limit).
JOIN_RATE_LIMIT_PER_MINUTE = env.int("JOIN_RATE_LIMIT_PER_MINUTE", default=30)
SPECTACULAR_SETTINGS = {
    "TITLE": "Dialogue Evaluation Platform API",
    "DESCRIPTION": "Datasets, backends, campaigns, dialogues, ratings, metric runs and reports.",
    "VERSION": "0.1.0",
    "SERVE_INCLUDE_SCHEMA": False,
    # Swagger UI is served from the vendored sidecar package: the platform runs offline.
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    # Several models have a `status` field with different choices; name each set.
    "ENUM_NAME_OVERRIDES": {
        "JobStatusEnum": "core.models.JobStatus",
        "DialogueStatusEnum": "chat.models.Dialogue.Status",
        "CampaignStatusEnum": "chat.models.Campaign.Status",
        "StaticRunItemStatusEnum": "chat.models.StaticRunItem.Status",
        "RatingJobStatusEnum": "annotation.models.RatingJob.Status",
        "AssignmentStatusEnum": "annotation.models.Assignment.Status",
        "JudgeModeEnum": "judges.models.Judge.Mode",
        "CampaignModeEnum": "chat.models.Campaign.Mode",
        "RatingJobModeEnum": "annotation.models.RatingJob.Mode",
        "JudgeAnswerStatusEnum": "judges.models.JudgeAnswer.Status",
    },
}

# --- Models on disk -----------------------------------------------------------------------
# Never download weights at run time: neural metrics and backends read local directories.
HF_HUB_OFFLINE = env.bool("HF_HUB_OFFLINE", default=True)
if HF_HUB_OFFLINE:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": env.str("LOG_LEVEL", default="INFO")},
}
