"""Django settings. Every variable comes from the environment (django-environ), as declared in
emailops/settings_catalog.py; see .env.example and docs/configuration.md."""

from __future__ import annotations

import importlib.util
import os
from datetime import timedelta
from pathlib import Path

import environ

from emailops import settings_catalog as catalog
from emailops.config_values import https_mode, strong_secret_key
from emailops.logging import go_log_level, report_log_level

BASE_DIR = Path(__file__).resolve().parent.parent

env = environ.Env()
environ.Env.read_env(BASE_DIR / ".env")  # optional; real environment variables win

# Every variable is declared once, in emailops/settings_catalog.py (name, parse, default, meaning),
# and read here through it; the few that need more than their parse are finished below.
# DJANGO_DEBUG first: it picks the defaults of the others. Off unless said otherwise: production is
# the default. The local stack (devstack) and the tests (tests/settings.py) turn it on.
DEBUG = catalog.read(env, catalog.BY_NAME["DJANGO_DEBUG"])
_values = catalog.read_all(env, debug=DEBUG)
globals().update(_values)
catalog.report_retired(os.environ)  # one line per variable no longer read (.env's included)

# Refused at once when weak with DEBUG off (the checks are emailops.config's, like every other).
# DJANGO_SECRET_KEY_FALLBACKS: keys retired from it that still verify what they signed and open what
# they sealed (unsubscribe links of emails already sent, the consumer's state on queued copies).
SECRET_KEY = strong_secret_key(_values["SECRET_KEY"], debug=DEBUG)

# --- HTTPS (DJANGO_HTTPS): proxy by default in production; DEBUG runs over plain http -----------
# proxy: TLS ends at the load balancer, which says so in X-Forwarded-Proto; without trusting it
# Django would see http and redirect forever.
HTTPS = https_mode(_values["HTTPS"])
SECURE_SSL_REDIRECT = SESSION_COOKIE_SECURE = CSRF_COOKIE_SECURE = HTTPS != "off"
SECURE_HSTS_SECONDS = 31_536_000 if HTTPS != "off" else 0
SECURE_HSTS_INCLUDE_SUBDOMAINS = SECURE_HSTS_PRELOAD = HTTPS != "off"
SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https") if HTTPS == "proxy" else None
# DJANGO_TRUSTED_PROXY_COUNT: proxies in front that append the client's address to
# X-Forwarded-For; behind the ALB set 1. The login throttle counts failures per client address
# (emailops.security.client_ip). Default 0, in every profile: the peer's address (REMOTE_ADDR),
# X-Forwarded-For ignored. Trusting it by default let a client that reaches the app directly
# claim a new address on every attempt.

# --- Sessions: signed out after SESSION_COOKIE_AGE (8 hours, fixed) without a request ------------
# Every request saves the session, so its expiry slides: an idle timeout, not a fixed lifetime.
SESSION_SAVE_EVERY_REQUEST = True

# --- Login throttle: django-axes' locks plus a wait (templates_admin/login_throttle.py) ----------
# 5 failures of one username from one address, or from one address whatever the usernames, lock
# that pair or that address for 15 minutes; nothing locks a username everywhere. A username
# guessed from many addresses makes its failing addresses wait instead (LoginWaitMiddleware).
AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",  # first: refuses a locked-out login before the check
    "django.contrib.auth.backends.ModelBackend",
]
AXES_FAILURE_LIMIT = 5
AXES_COOLOFF_TIME = timedelta(minutes=15)
# Each is its own count: one username from one address, or many usernames from one address.
# A username alone is no key: five failures from anywhere would lock its owner out everywhere.
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"], "ip_address"]
AXES_CLIENT_IP_CALLABLE = "emailops.security.client_ip"
# Counted as NFKC, stripped, case-folded: fullwidth, padded or upper-case admin2 is admin2.
AXES_USERNAME_CALLABLE = "templates_admin.login_throttle.throttle_username"
AXES_LOCKOUT_TEMPLATE = "templates_admin/login_locked.html"

INSTALLED_APPS = [
    "django.contrib.admin.apps.SimpleAdminConfig",  # autodiscovery: emailops/urls.py
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    # The capabilities, below the console that shows and drives them (docs/architecture.md).
    "audit",  # the read audit and the audit trails' retention
    "monitoring",  # beat's periodic checks and their readings
    "webhooks",  # webhook endpoints and delivery
    "jobs",  # the job engine (the kinds are registered by the apps that offer them)
    "templates_admin",
    "worker",
    "api",
    "preferences",  # the public unsubscribe page (/u/<token>): no login, no cookies
    "axes",  # login throttle
]
# Every process installs the same apps, and each loads only what it uses, so a queue consumer
# (which serves no page and sends no Celery task) reaches its first ReceiveMessage fast
# (bench/startup.py): the admin's autodiscovery, which imports every console module, runs with the
# URLs (emailops/urls.py); Celery is imported where a task is sent or defined; and ninja (with
# pydantic, about 1 s to import) is not an app: the API docs page finds its templates and static
# files through the two entries below, found without importing it.
_NINJA = Path(importlib.util.find_spec("ninja").origin).parent

MIDDLEWARE = [
    # First: /healthz answers load balancer and container probes (by IP, over http) before the
    # host check and the HTTPS redirect could refuse them.
    "emailops.health.HealthCheckMiddleware",
    "django.middleware.security.SecurityMiddleware",
    # request.container: the process's adapters, which views hand down (emailops/middleware.py).
    "emailops.middleware.ContainerMiddleware",
    # One Content-Security-Policy on every response; pages may set a stricter one.
    "emailops.security.ContentSecurityPolicyMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",  # static files from gunicorn, no nginx needed
    # Before the session, CSRF and messages middleware, so it sees their cookies last: the public
    # unsubscribe page's responses carry none (preferences/middleware.py).
    "preferences.middleware.CookielessMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    # A username guessed from many addresses: its failing addresses wait (before the login view).
    "templates_admin.login_throttle.LoginWaitMiddleware",
    "axes.middleware.AxesMiddleware",  # last, as django-axes requires
]

ROOT_URLCONF = "emailops.urls"
WSGI_APPLICATION = "emailops.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        # The overrides extend the admin's own base_site.html (the emergency stop's banner).
        "DIRS": [BASE_DIR / "templates_admin" / "overrides", _NINJA / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "templates_admin.context_processors.send_stop",
            ],
        },
    },
]

DATABASES = {"default": _values["DATABASE_URL"]}
if not os.environ.get("DATABASE_URL"):  # the default's SQLite file is the project directory's
    DATABASES["default"]["NAME"] = str(BASE_DIR / "db.sqlite3")
if DATABASES["default"].get("ENGINE", "").endswith("sqlite3"):
    # Several processes write the file (console, Celery workers, beat). A transaction takes the
    # write lock as it begins (IMMEDIATE): one that read first and then writes would otherwise be
    # told "database is locked" at once, with no wait, when another writer holds the lock (SQLite's
    # deadlock answer); and each waits up to 20 s for the lock rather than 5.
    DATABASES["default"].setdefault("OPTIONS", {}).update(
        {"transaction_mode": "IMMEDIATE", "timeout": 20}
    )
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]

LANGUAGE_CODE = "en-us"
FORMAT_MODULE_PATH = ["emailops.formats"]  # one date format on every page
USE_I18N = True
USE_TZ = True
STATIC_URL = "static/"
STATICFILES_DIRS = [_NINJA / "static"]
STATIC_ROOT = BASE_DIR / "staticfiles"
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    # Production serves hashed, compressed copies made by collectstatic (the image's build step);
    # DEBUG serves the apps' files as they are, with no collectstatic needed.
    "staticfiles": {
        "BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"
        if DEBUG
        else "whitenoise.storage.CompressedManifestStaticFilesStorage"
    },
}
# Under DEBUG whitenoise serves the apps' static directories directly (nothing collected).
WHITENOISE_USE_FINDERS = DEBUG
WHITENOISE_AUTOREFRESH = DEBUG

# --- The product's settings (emailops/settings_catalog.py): finished where one needs more --------
# boto3's own name for the region is honoured as boto3 honours it, when AWS_REGION is unset.
AWS_REGION = _values["AWS_REGION"] or os.environ.get("AWS_DEFAULT_REGION") or "us-east-1"
# The erasure tombstones' key defaults to one derived from DJANGO_SECRET_KEY; set it on its own so
# that rotating that key keeps them matching.
ERASURE_HASH_KEY = _values["ERASURE_HASH_KEY"] or f"derived-from-secret-key:{SECRET_KEY}"
# Endpoints on loopback (and plain http to them): only for development.
WEBHOOK_ALLOW_LOOPBACK = DEBUG

# --- Celery -------------------------------------------------------------------------------------
CELERY_TASK_ACKS_LATE = True
# A job outlives Redis's default one-hour redelivery window; jobs guard against a second run.
CELERY_BROKER_TRANSPORT_OPTIONS = {"visibility_timeout": 6 * 3600}
CELERY_WORKER_HIJACK_ROOT_LOGGER = False  # keep our logfmt logging

# --- Logging: one logfmt line per event ---------------------------------------------------------
# Read as the Go service reads it (case-insensitive, offsets like INFO+2; emailops.logging): an
# unknown value is INFO and one error line, never a failed start.
LOG_LEVEL, _log_level_complaint = go_log_level(_values["LOG_LEVEL"])
report_log_level(_log_level_complaint)
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"logfmt": {"()": "emailops.logging.LogfmtFormatter"}},
    # No /u/<token> on any line: Django's "Bad Request: /u/…" and django.server's request lines.
    "filters": {"redact_tokens": {"()": "emailops.logging.RedactUnsubscribeTokens"}},
    "handlers": {
        "console": {
            "class": "logging.StreamHandler",
            "formatter": "logfmt",
            "filters": ["redact_tokens"],
        }
    },
    "root": {"handlers": ["console"], "level": "WARNING"},
    "loggers": {
        "emailops": {"level": LOG_LEVEL},
        "worker": {"level": LOG_LEVEL},
        "templates_admin": {"level": LOG_LEVEL},
        "audit": {"level": LOG_LEVEL},
        "monitoring": {"level": LOG_LEVEL},
        "webhooks": {"level": LOG_LEVEL},
        "jobs": {"level": LOG_LEVEL},
        "django": {"level": "INFO"},
    },
}
