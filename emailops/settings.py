"""Django settings. Everything comes from the environment (django-environ); see .env.example."""

from __future__ import annotations

import importlib.util
from datetime import timedelta
from pathlib import Path

import environ

from emailops.config import proxy_ssl_header, strong_secret_key
from emailops.logging import go_log_level, report_log_level

BASE_DIR = Path(__file__).resolve().parent.parent

env = environ.Env()
environ.Env.read_env(BASE_DIR / ".env")  # optional; real environment variables win

# Off unless said otherwise: production is the default. The local stack (devstack) and the test
# suite (tests/settings.py) turn it on before Django loads, which also allows plain http below.
DEBUG = env.bool("DJANGO_DEBUG", default=False)
# Refused at once when weak with DEBUG off (the checks are emailops.config's, like every other).
SECRET_KEY = strong_secret_key(env.str("DJANGO_SECRET_KEY", default=""), debug=DEBUG)
# Keys retired from DJANGO_SECRET_KEY that still verify what they signed (the unsubscribe links of
# emails already sent, the consumer's sealed queue state: emailops.queue_state): rotate by moving
# the old key here, drop it once nothing needs it.
SECRET_KEY_FALLBACKS = env.list("DJANGO_SECRET_KEY_FALLBACKS", default=[])
ALLOWED_HOSTS = env.list("DJANGO_ALLOWED_HOSTS", default=["localhost", "127.0.0.1", "[::1]"])
CSRF_TRUSTED_ORIGINS = env.list("DJANGO_CSRF_TRUSTED_ORIGINS", default=[])

# --- HTTPS: on by default in production; DEBUG (local stack, tests) runs over plain http ---------
SECURE_SSL_REDIRECT = env.bool("DJANGO_SECURE_SSL_REDIRECT", default=not DEBUG)
SESSION_COOKIE_SECURE = env.bool("DJANGO_SESSION_COOKIE_SECURE", default=not DEBUG)
CSRF_COOKIE_SECURE = env.bool("DJANGO_CSRF_COOKIE_SECURE", default=not DEBUG)
SECURE_HSTS_SECONDS = env.int("DJANGO_SECURE_HSTS_SECONDS", default=0 if DEBUG else 31_536_000)
SECURE_HSTS_INCLUDE_SUBDOMAINS = env.bool(
    "DJANGO_SECURE_HSTS_INCLUDE_SUBDOMAINS", default=not DEBUG
)
SECURE_HSTS_PRELOAD = env.bool("DJANGO_SECURE_HSTS_PRELOAD", default=not DEBUG)
# TLS ends at the load balancer, which says so in X-Forwarded-Proto; without this Django would see
# http and redirect forever. Empty it when nothing in front sets (and strips) that header.
SECURE_PROXY_SSL_HEADER = proxy_ssl_header(
    env.list(
        "DJANGO_SECURE_PROXY_SSL_HEADER",
        default=[] if DEBUG else ["HTTP_X_FORWARDED_PROTO", "https"],
    )
)
# Proxies in front that append the client's address to X-Forwarded-For; behind the ALB set 1.
# The login throttle counts failures per client address (emailops.security.client_ip). Default 0,
# in every profile: the peer's address (REMOTE_ADDR), X-Forwarded-For ignored. Trusting it by
# default let a client that reaches the app directly claim a new address on every attempt.
TRUSTED_PROXY_COUNT = env.int("DJANGO_TRUSTED_PROXY_COUNT", default=0)

# --- Sessions: signed out after this long without a request (8 hours) --------------------------
# Every request saves the session, so its expiry slides: an idle timeout, not a fixed lifetime.
SESSION_COOKIE_AGE = env.int("DJANGO_SESSION_IDLE_SECONDS", default=8 * 3600)
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

DATABASES = {"default": env.db("DATABASE_URL", default=f"sqlite:///{BASE_DIR / 'db.sqlite3'}")}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]

LANGUAGE_CODE = "en-us"
TIME_ZONE = env.str("TIME_ZONE", default="UTC")
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
    default="password,passwd,secret,token,key,credential,signature,session,cookie,otp,link,url,code,pin",
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
# A send starts only on a claim with at least this long left; less, and it is extended first (or
# let go, and the record waits): never a send on a claim that may have lapsed.
CLAIM_SEND_MARGIN_SECONDS = env.int("CLAIM_SEND_MARGIN_SECONDS", default=5)
# The send API sends inline: at most this many recipients a request (more is a 400, nothing sent).
# The API's gunicorn timeout must fit this many sends at the SES rate (docs/deploy.md).
API_MAX_RECIPIENTS = env.int("API_MAX_RECIPIENTS", default=50)
# Audit rows (journal reads, mapping changes, email actions, suppression removals, jobs) older than
# this many days are pruned daily by Celery beat.
AUDIT_RETENTION_DAYS = env.int("AUDIT_RETENTION_DAYS", default=400)
# The consumer caches templates it fetched from S3 for this long (0 disables).
TEMPLATE_CACHE_SECONDS = env.int("TEMPLATE_CACHE_SECONDS", default=60)
# Emails per second across every consumer process on every machine: unset = SES GetSendQuota's
# MaxSendRate (re-read every 5 minutes), 0 = no limit.
SES_MAX_SEND_RATE = env.str("SES_MAX_SEND_RATE", default="")
# After SES says "Daily message quota exceeded", every consumer pauses sending this long.
SES_QUOTA_PAUSE_SECONDS = env.int("SES_QUOTA_PAUSE_SECONDS", default=600)
# Shared counters: the SES send-rate bucket (without Redis each consumer limits itself, and says
# so loudly) and each API token's requests per minute.
REDIS_URL = env.str("REDIS_URL", default="redis://127.0.0.1:6379/0")
# One bucket per SES account: stacks that share a Redis but not an account need different keys.
SES_RATE_REDIS_KEY = env.str("SES_RATE_REDIS_KEY", default="emailops:ses-rate")
# While Redis is unreachable each process sends at most the rate divided by this (about the number
# of consumer processes), so together they stay near the account's rate.
SES_RATE_FALLBACK_CONSUMERS = env.int("SES_RATE_FALLBACK_CONSUMERS", default=4)
# The send guard (docs/send-guard.md): the rate safeguard's counters, shared with the Go consumer,
# and the loop detector's. Empty table name: no guard at all.
# The Go service's service-wide send control: false = every request journaled log-only, none sent.
SEND_ENABLED = env.bool("SEND_ENABLED", default=True)
RATE_LIMIT_TABLE = env.str("RATE_LIMIT_TABLE", default="email-rate-counter")
SEND_RATE_LIMIT_PER_MINUTE = env.int("SEND_RATE_LIMIT_PER_MINUTE", default=300)
PER_MESSAGE_RATE_LIMIT_PER_MINUTE = env.int("PER_MESSAGE_RATE_LIMIT_PER_MINUTE", default=120)
RATE_SAFEGUARD_OVER_CAP = env.str("RATE_SAFEGUARD_OVER_CAP", default="hold")
RATE_SAFEGUARD_HOLD_MAX_SECONDS = env.int("RATE_SAFEGUARD_HOLD_MAX_SECONDS", default=3600)
LOOP_LIMIT_PER_HOUR = env.int("LOOP_LIMIT_PER_HOUR", default=5)
# The manifest of variables each template expects (the console's preview uses it).
TEMPLATE_VARIABLES_PATH = env.path(
    "TEMPLATE_VARIABLES_PATH", default=BASE_DIR / "emailops" / "data" / "template-variables.json"
)

# The suppression list: addresses never sent to again (hard bounces, complaints, by hand).
SUPPRESSION_TABLE = env.str("SUPPRESSION_TABLE", default="email-suppression")
# Erasure's tombstones: keyed hashes of erased addresses (docs/journal.md). The key defaults to one
# derived from DJANGO_SECRET_KEY; set it on its own so that rotating that key keeps them matching.
ERASURE_TOMBSTONE_TABLE = env.str("ERASURE_TOMBSTONE_TABLE", default="email-erasure-tombstones")
ERASURE_HASH_KEY = (
    env.str("ERASURE_HASH_KEY", default="") or f"derived-from-secret-key:{SECRET_KEY}"
)
# Recipient preferences (one item per address and category, written by emailops only): what a
# recipient unsubscribed from. The consumer caches each answer this long, so a change takes effect
# within it across consumers.
PREFERENCES_TABLE = env.str("PREFERENCES_TABLE", default="email-preferences")
PREFERENCES_CACHE_SECONDS = env.int("PREFERENCES_CACHE_SECONDS", default=5)
# Mirror suppression additions/removals to SES's account-level suppression list (sesv2).
SES_ACCOUNT_SUPPRESSION_SYNC = env.bool("SES_ACCOUNT_SUPPRESSION_SYNC", default=False)
# The suppressed addresses as a Redis set, so the consumer's check costs no DynamoDB read (see
# docs/pipeline.md). Empty: every check reads the table.
SUPPRESSION_INDEX_REDIS_KEY = env.str("SUPPRESSION_INDEX_REDIS_KEY", default="emailops:suppressed")

# --- SES delivery events (docs: README "Delivery events") ---
# Every email goes out with this configuration set, whose event destination publishes to SNS.
# Empty: no configuration set (and no events).
SES_CONFIGURATION_SET = env.str("SES_CONFIGURATION_SET", default="emailops")
# The queue subscribed to the events topic; consume_ses_events reads it.
SES_EVENTS_QUEUE_URL = env.str("SES_EVENTS_QUEUE_URL", default="")
# Events consume_ses_events handles at once (a receive loop per 10); --concurrency overrides it.
SES_EVENTS_CONCURRENCY = env.int("SES_EVENTS_CONCURRENCY", default=16)
# The topic bootstrap_aws creates and the local simulator publishes to.
SES_EVENTS_TOPIC_NAME = env.str("SES_EVENTS_TOPIC_NAME", default="email-ses-events")
# Accept SNS messages only from these topic ARNs (comma list). Empty accepts any, which is only
# allowed with verification off: consume_ses_events refuses to start otherwise (bootstrap_aws
# prints the value to set).
SES_EVENTS_TOPIC_ARNS = env.list("SES_EVENTS_TOPIC_ARNS", default=[])
# The Go service's SNS topic of SES identity notifications (notificationType Bounce/Complaint):
# bootstrap_aws subscribes the events queue to it, and consume_ses_events applies them beside
# event publishing, each event once. Empty: not subscribed. Add it to SES_EVENTS_TOPIC_ARNS too.
SES_EVENTS_NOTIFICATIONS_TOPIC_ARN = env.str("SES_EVENTS_NOTIFICATIONS_TOPIC_ARN", default="")
# Verify SNS signatures; on unless DEBUG. The local stack and tests turn it off.
SES_EVENTS_VERIFY_SIGNATURES = env.bool("SES_EVENTS_VERIFY_SIGNATURES", default=not DEBUG)
# With verification on: a signed SNS message whose Timestamp is older than this is dead-lettered
# (a signature never expires, so an old genuine message could otherwise be replayed for ever);
# 0 accepts any age. 30 days (2592000) is above the oldest a genuine event can be: SNS retries a
# delivery to SQS for 23 days (100,015 attempts, its policy for AWS-managed endpoints) and the
# events queue keeps a message 4 days (SQS's default retention), 27 days together. A DLQ redrive
# of older messages needs it raised for the while. One more than 5 minutes ahead of this host's
# clock is refused too.
SES_EVENTS_MAX_AGE_SECONDS = env.int("SES_EVENTS_MAX_AGE_SECONDS", default=2592000)
# The events queue is subscribed with raw message delivery: bare events (no SNS envelope, so no
# signature and no topic to check) are accepted even with verification on. What is trusted then
# is the queue policy alone (docs/operations.md).
SES_EVENTS_RAW_DELIVERY = env.bool("SES_EVENTS_RAW_DELIVERY", default=False)
# Events with no journal row and events of unknown kinds, kept for JOURNAL_TTL_DAYS.
SES_EVENTS_UNMATCHED_TABLE = env.str(
    "SES_EVENTS_UNMATCHED_TABLE", default="email-delivery-events-unmatched"
)
# Local stack only: play SES's mailbox simulator (moto publishes no events).
SES_SIMULATE_EVENTS = env.bool("SES_SIMULATE_EVENTS", default=False)

# --- Reputation: counters, rates and the guard (docs/reputation.md) -----------------------------
# Hourly counters per account, messageId and organization (DynamoDB; empty = not counted).
STATS_TABLE = env.str("STATS_TABLE", default="email-stats")
# Counts are summed in memory; one thread writes them while the others' gather, and a failed write
# keeps its counts for the next. > 0 batches further (one ADD per scope and hour every so many
# seconds), but a killed consumer loses that many seconds of counts.
STATS_FLUSH_SECONDS = env.float("STATS_FLUSH_SECONDS", default=1.0)
# Rates are computed over this many hours, and not judged below this many delivered-or-bounced.
REPUTATION_WINDOW_HOURS = env.int("REPUTATION_WINDOW_HOURS", default=24)
REPUTATION_MIN_VOLUME = env.int("REPUTATION_MIN_VOLUME", default=200)
# Percentages, below SES's review (5 % / 0.1 %) and pause (10 % / 0.5 %) lines.
REPUTATION_WARN_BOUNCE_PERCENT = env.float("REPUTATION_WARN_BOUNCE_PERCENT", default=2.0)
REPUTATION_WARN_COMPLAINT_PERCENT = env.float("REPUTATION_WARN_COMPLAINT_PERCENT", default=0.05)
REPUTATION_ACT_BOUNCE_PERCENT = env.float("REPUTATION_ACT_BOUNCE_PERCENT", default=4.0)
REPUTATION_ACT_COMPLAINT_PERCENT = env.float("REPUTATION_ACT_COMPLAINT_PERCENT", default=0.08)
# Past the act line, normal-priority mail goes at this share of the send rate (bulk waits).
REPUTATION_SLOW_SHARE = env.float("REPUTATION_SLOW_SHARE", default=0.25)
# A paused record looks again after this long.
REPUTATION_PAUSE_WAIT_SECONDS = env.int("REPUTATION_PAUSE_WAIT_SECONDS", default=60)
# Warn alerts are POSTed here as {"text": ...} (a Slack incoming webhook accepts it); empty = none.
ALERT_WEBHOOK_URL = env.str("ALERT_WEBHOOK_URL", default="")

# --- Recipient preferences: the public one-click unsubscribe (docs/unsubscribe.md) -------------
# Where /u/<token> is reached from the internet (https://emails.example.org, no trailing slash);
# the List-Unsubscribe links are built on it. Empty: no link, no List-Unsubscribe header.
PUBLIC_BASE_URL = env.str("PUBLIC_BASE_URL", default="")
# Requests per minute to /u/<token> for one address, and from one client address (0 = no limit).
# Mailbox providers POST one-click unsubscribes from their own servers: keep the client limit well
# above a campaign's unsubscribes a minute.
UNSUBSCRIBE_RATE_PER_ADDRESS = env.int("UNSUBSCRIBE_RATE_PER_ADDRESS", default=30)
UNSUBSCRIBE_RATE_PER_CLIENT = env.int("UNSUBSCRIBE_RATE_PER_CLIENT", default=300)

# --- Delivery webhooks (docs/webhooks.md) ------------------------------------------------------
# Where the pipeline and the events consumer hand webhook events: "celery" (a task on the Celery
# broker, Redis) or "" (none emitted).
WEBHOOK_OUTBOX = env.str("WEBHOOK_OUTBOX", default="")
# The Celery queue the webhook tasks go to (a worker of its own: slow receivers wait there).
WEBHOOK_QUEUE = env.str("WEBHOOK_QUEUE", default="emailops-webhooks")
# One POST's whole budget (connect + response), seconds; no redirects are followed.
WEBHOOK_TIMEOUT_SECONDS = env.float("WEBHOOK_TIMEOUT_SECONDS", default=5.0)
# Consecutive failed attempts after which an endpoint is marked failing (and one alert is sent).
WEBHOOK_FAILING_AFTER = env.int("WEBHOOK_FAILING_AFTER", default=10)
# Deliveries one endpoint may have in flight at once; more wait (rescheduled), others go on.
WEBHOOK_MAX_IN_FLIGHT = env.int("WEBHOOK_MAX_IN_FLIGHT", default=4)
# Attempts one endpoint may receive per minute.
WEBHOOK_MAX_PER_MINUTE = env.int("WEBHOOK_MAX_PER_MINUTE", default=600)
# After a rotation, the old secret signs beside the new one this long.
WEBHOOK_ROTATION_OVERLAP_HOURS = env.int("WEBHOOK_ROTATION_OVERLAP_HOURS", default=24)
# Endpoints on loopback (and plain http to them): only for development (defaults to DJANGO_DEBUG).
WEBHOOK_ALLOW_LOOPBACK = env.bool("WEBHOOK_ALLOW_LOOPBACK", default=DEBUG)

# The S3 template store's client: path, virtual (host) or auto addressing.
AWS_S3_ADDRESSING_STYLE = env.str("AWS_S3_ADDRESSING_STYLE", default="auto")

# --- Celery -------------------------------------------------------------------------------------
CELERY_BROKER_URL = env.str("CELERY_BROKER_URL", default="redis://127.0.0.1:6379/0")
CELERY_RESULT_BACKEND = env.str("CELERY_RESULT_BACKEND", default="") or None
CELERY_TASK_ALWAYS_EAGER = env.bool("CELERY_TASK_ALWAYS_EAGER", default=False)
CELERY_TASK_ACKS_LATE = True
# Which Redis list the workers read (tests and parallel stacks use their own).
CELERY_TASK_DEFAULT_QUEUE = env.str("CELERY_TASK_DEFAULT_QUEUE", default="emailops")
# A job outlives Redis's default one-hour redelivery window; jobs guard against a second run.
CELERY_BROKER_TRANSPORT_OPTIONS = {"visibility_timeout": 6 * 3600}
CELERY_WORKER_HIJACK_ROOT_LOGGER = False  # keep our logfmt logging

# --- Operations (Celery jobs and beat; see emailops/celery.py) ----------------------------------
# How often beat reads the dead-letter queue's depth (an ERROR line and a console banner if > 0).
OPS_DLQ_CHECK_SECONDS = env.int("OPS_DLQ_CHECK_SECONDS", default=60)
# How often beat looks for stuck claims (QUEUED rows past their lease) with a bounded Scan.
OPS_STUCK_CLAIMS_SECONDS = env.int("OPS_STUCK_CLAIMS_SECONDS", default=3600)
# Items one Scan of the journal may read (stuck claims per run; a bulk resend's selection).
OPS_SCAN_MAX_ITEMS = env.int("OPS_SCAN_MAX_ITEMS", default=20000)
# Hour (UTC, 0-23) of the daily template check.
OPS_TEMPLATE_CHECK_HOUR = env.int("OPS_TEMPLATE_CHECK_HOUR", default=3)
# The console's front page: days of hourly charts.
OPS_DASHBOARD_DAYS = env.int("OPS_DASHBOARD_DAYS", default=7)

# --- Logging: one logfmt line per event ---------------------------------------------------------
# Read as the Go service reads it (case-insensitive, offsets like INFO+2; emailops.logging): an
# unknown value is INFO and one error line, never a failed start.
LOG_LEVEL, _log_level_complaint = go_log_level(env.str("LOG_LEVEL", default="INFO"))
report_log_level(_log_level_complaint)
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
