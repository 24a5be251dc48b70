"""Django settings. Everything comes from the environment (django-environ); see .env.example."""

from __future__ import annotations

from pathlib import Path

import environ

BASE_DIR = Path(__file__).resolve().parent.parent

env = environ.Env()
environ.Env.read_env(BASE_DIR / ".env")  # optional; real environment variables win

DEBUG = env.bool("DJANGO_DEBUG", default=False)
# The default only suits the local stack and tests; production sets its own.
SECRET_KEY = env.str("DJANGO_SECRET_KEY", default="insecure-dev-key-change-me")
ALLOWED_HOSTS = env.list("DJANGO_ALLOWED_HOSTS", default=["localhost", "127.0.0.1", "[::1]"])
CSRF_TRUSTED_ORIGINS = env.list("DJANGO_CSRF_TRUSTED_ORIGINS", default=[])

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "templates_admin",
    "worker",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]

ROOT_URLCONF = "emailops.urls"
WSGI_APPLICATION = "emailops.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [],
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

DATABASES = {"default": env.db("DATABASE_URL", default=f"sqlite:///{BASE_DIR / 'db.sqlite3'}")}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

LANGUAGE_CODE = "en-us"
TIME_ZONE = env.str("TIME_ZONE", default="UTC")
USE_I18N = True
USE_TZ = True
STATIC_URL = "static/"
STATIC_ROOT = BASE_DIR / "staticfiles"

# --- The email service (names match the existing Go service) -----------------------------------
EMAIL_SERVICE_QUEUE_URL = env.str("EMAIL_SERVICE_QUEUE_URL", default="")
TEMPLATES_TABLE = env.str("TEMPLATES_TABLE", default="email-message-templates")
JOURNAL_TABLE = env.str("JOURNAL_TABLE", default="")
S3_BUCKET = env.str("S3_BUCKET", default="")
JOURNAL_TTL_DAYS = env.int("JOURNAL_TTL_DAYS", default=90)
# The console masks stored context values whose key contains one of these (case-insensitive).
JOURNAL_SENSITIVE_KEYS = env.get_value(
    "JOURNAL_SENSITIVE_KEYS",
    cast=list,
    default="password,passwd,secret,token,key,credential,signature,session,cookie,otp,link",
    parse_default=True,
)
# When the Go consumer stopped writing (ISO time): bounds the search for its rows (docs/journal.md).
JOURNAL_GO_CUTOVER = env.str("JOURNAL_GO_CUTOVER", default="")
EMAIL_SENDER = env.str("EMAIL_SENDER", default="")
EMAIL_REPLY_TO = env.str("EMAIL_REPLY_TO", default="")
PENNSIEVE_DOMAIN = env.str("PENNSIEVE_DOMAIN", default="")
AWS_REGION = env.str("AWS_REGION", default="") or env.str("AWS_DEFAULT_REGION", default="us-east-1")
# Retry back-off for transient failures: between half and all of min(cap, base * 2**(receives-1)).
RETRY_BACKOFF_BASE_SECONDS = env.int("RETRY_BACKOFF_BASE_SECONDS", default=30)
RETRY_BACKOFF_CAP_SECONDS = env.int("RETRY_BACKOFF_CAP_SECONDS", default=900)
# Transient trouble dead-letters a record only after this long since its first attempt.
RETRY_MAX_SECONDS = env.int("RETRY_MAX_SECONDS", default=86_400)
# Records (and recipients) the consumer works on at once; its metrics port (0 = none).
CONSUMER_CONCURRENCY = env.int("CONSUMER_CONCURRENCY", default=16)
CONSUMER_METRICS_PORT = env.int("CONSUMER_METRICS_PORT", default=0)
# Claim lease; 0 means "the queue's visibility timeout", read at start-up.
CLAIM_LEASE_SECONDS = env.int("CLAIM_LEASE_SECONDS", default=0)
# The consumer caches templates it fetched from S3 for this long (0 disables).
TEMPLATE_CACHE_SECONDS = env.int("TEMPLATE_CACHE_SECONDS", default=60)
# The manifest of variables each template expects (the console's preview uses it).
TEMPLATE_VARIABLES_PATH = env.path(
    "TEMPLATE_VARIABLES_PATH", default=BASE_DIR / "emailops" / "data" / "template-variables.json"
)

# The suppression list: addresses never sent to again (hard bounces, complaints, by hand).
SUPPRESSION_TABLE = env.str("SUPPRESSION_TABLE", default="email-suppression")
# Mirror suppression additions/removals to SES's account-level suppression list (sesv2).
SES_ACCOUNT_SUPPRESSION_SYNC = env.bool("SES_ACCOUNT_SUPPRESSION_SYNC", default=False)

# --- SES delivery events (docs: README "Delivery events") ---
# Every email goes out with this configuration set, whose event destination publishes to SNS.
# Empty: no configuration set (and no events).
SES_CONFIGURATION_SET = env.str("SES_CONFIGURATION_SET", default="emailops")
# The queue subscribed to the events topic; consume_ses_events reads it.
SES_EVENTS_QUEUE_URL = env.str("SES_EVENTS_QUEUE_URL", default="")
# The topic bootstrap_aws creates and the local simulator publishes to.
SES_EVENTS_TOPIC_NAME = env.str("SES_EVENTS_TOPIC_NAME", default="email-ses-events")
# Accept SNS messages only from these topic ARNs (comma list); empty accepts any.
SES_EVENTS_TOPIC_ARNS = env.list("SES_EVENTS_TOPIC_ARNS", default=[])
# Verify SNS signatures; on unless DEBUG. The local stack and tests turn it off.
SES_EVENTS_VERIFY_SIGNATURES = env.bool("SES_EVENTS_VERIFY_SIGNATURES", default=not DEBUG)
# Events with no journal row and events of unknown kinds, kept for JOURNAL_TTL_DAYS.
SES_EVENTS_UNMATCHED_TABLE = env.str(
    "SES_EVENTS_UNMATCHED_TABLE", default="email-delivery-events-unmatched"
)
# Local stack only: play SES's mailbox simulator (moto publishes no events).
SES_SIMULATE_EVENTS = env.bool("SES_SIMULATE_EVENTS", default=False)

# django-storages (the S3 template store passes bucket and region itself).
AWS_S3_ADDRESSING_STYLE = env.str("AWS_S3_ADDRESSING_STYLE", default="auto")

# --- Celery -------------------------------------------------------------------------------------
CELERY_BROKER_URL = env.str("CELERY_BROKER_URL", default="redis://127.0.0.1:6379/0")
CELERY_RESULT_BACKEND = env.str("CELERY_RESULT_BACKEND", default="") or None
CELERY_TASK_ALWAYS_EAGER = env.bool("CELERY_TASK_ALWAYS_EAGER", default=False)
CELERY_TASK_ACKS_LATE = True

# --- Logging: one logfmt line per event ---------------------------------------------------------
LOG_LEVEL = env.str("LOG_LEVEL", default="INFO")
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"logfmt": {"()": "emailops.logging.LogfmtFormatter"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "logfmt"}},
    "root": {"handlers": ["console"], "level": "WARNING"},
    "loggers": {
        "emailops": {"level": LOG_LEVEL},
        "worker": {"level": LOG_LEVEL},
        "templates_admin": {"level": LOG_LEVEL},
        "django": {"level": "INFO"},
    },
}
