"""One settings module, driven by the environment, with embedded defaults.

Without any environment the platform runs on a SQLite file and a Celery broker stored in another
SQLite file (kombu's SQLAlchemy transport): a real worker process, no server to install. Setting
`DATABASE_URL=postgres://…` and `CELERY_BROKER_URL=redis://…` moves the same code onto
PostgreSQL and Redis. Every variable is documented in `.env.example` and the README.
"""

import os
from pathlib import Path

import environ
from django.core.exceptions import ImproperlyConfigured

BASE_DIR = Path(__file__).resolve().parent.parent

env = environ.Env()
# A `.env` file is optional; the real environment always wins.
environ.Env.read_env(BASE_DIR / ".env", overwrite=False)

VAR_DIR = Path(env.str("PLATFORM_VAR_DIR", default=str(BASE_DIR / "var")))
VAR_DIR.mkdir(parents=True, exist_ok=True)

# django-environ raises on a malformed boolean ("yes please"), which is what we want.
DEBUG = env.bool("DEBUG", default=False)
_DEV_SECRET = "insecure-dev-key-only-for-debug-and-tests"  # noqa: S105
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
    "core",
    "chat",
    "annotation",
    "metrics",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.locale.LocaleMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
]

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
            ],
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
CELERY_BROKER_URL = env.str(
    "CELERY_BROKER_URL", default=f"sqla+sqlite:///{VAR_DIR / 'celery-broker.sqlite3'}"
)
CELERY_RESULT_BACKEND = env.str(
    "CELERY_RESULT_BACKEND",
    default=(
        CELERY_BROKER_URL
        if CELERY_BROKER_URL.startswith("redis")
        else f"db+sqlite:///{VAR_DIR / 'celery-results.sqlite3'}"
    ),
)
CELERY_TASK_DEFAULT_QUEUE = "default"
CELERY_TASK_QUEUES_NAMES = ("default", "chat", "metrics", "gpu")
CELERY_TASK_ROUTES = {
    "chat.tasks.*": {"queue": "chat"},
    "metrics.tasks.*": {"queue": "metrics"},
}
CELERY_TASK_SERIALIZER = "json"
CELERY_RESULT_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_TASK_ACKS_LATE = True
# With late acks, Redis redelivers a task still unacknowledged after this long (its default is
# 1 h): long static runs and metric runs must not be started twice while they are still running.
# Only for Redis: the embedded SQLAlchemy transport hands its options to create_engine().
CELERY_BROKER_TRANSPORT_OPTIONS = (
    {"visibility_timeout": env.int("CELERY_VISIBILITY_TIMEOUT", default=6 * 3600)}
    if CELERY_BROKER_URL.startswith(("redis://", "rediss://"))
    else {}
)
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_RESULT_EXPIRES = 3600
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
CELERY_TASK_ALWAYS_EAGER = False
# Seconds /healthz waits for a worker to answer its ping task.
HEALTH_WORKER_TIMEOUT = env.float("HEALTH_WORKER_TIMEOUT", default=5.0)

# --- Auth, i18n ---------------------------------------------------------------------------
AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
]
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "home"
LOGOUT_REDIRECT_URL = "login"

LANGUAGE_CODE = env.str("LANGUAGE_CODE", default="zh-hans")
LANGUAGES = [("zh-hans", "简体中文"), ("en", "English")]
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
MEDIA_ROOT = Path(env.str("MEDIA_ROOT", default=str(VAR_DIR / "media")))
MEDIA_URL = "media/"
# Dataset uploads larger than this are refused with a clear message (bytes).
DATASET_UPLOAD_MAX_BYTES = env.int("DATASET_UPLOAD_MAX_BYTES", default=200 * 1024 * 1024)
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
}
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
        "JobStatusEnum": "metrics.models.JobStatus",
        "DialogueStatusEnum": "chat.models.Dialogue.Status",
        "CampaignStatusEnum": "chat.models.Campaign.Status",
        "StaticRunStatusEnum": "chat.models.StaticRun.Status",
        "StaticRunItemStatusEnum": "chat.models.StaticRunItem.Status",
        "RatingJobStatusEnum": "annotation.models.RatingJob.Status",
        "AssignmentStatusEnum": "annotation.models.Assignment.Status",
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
    # One INFO line per model request would flood the log of a busy chat server.
    "loggers": {"httpx": {"level": "WARNING"}, "httpcore": {"level": "WARNING"}},
}
