"""Every environment variable emailops reads, declared once: name, how it is parsed, its default and
one line of meaning. ``emailops.settings`` reads them through ``read_all``; ``.env.example`` and the
table of docs/configuration.md are written from them (``python -m emailops.settings_docs``, which
tests/test_configuration_docs.py runs to catch drift). No Django here: the settings import it.

``FIXED`` are the values that used to be variables and are constants now (each with why): they stay
Django settings of the same name, so the typed sections (``emailops.config``) read them as before and
a test may still set one. ``RETIRED`` names every variable that is no longer read: one start-up line
says so when one is still set (``report_retired``).
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from emailops.core.events import logfmt
from emailops.logging import LogfmtFormatter

# How each kind is read (django-environ's casts); "db" is a database URL (env.db_url).
CASTS: dict[str, type] = {"str": str, "int": int, "float": float, "bool": bool, "list": list}


@dataclass(frozen=True)
class Setting:
    name: str
    kind: str  # a key of CASTS, or "db"
    default: str  # as .env.example writes it: the production value
    doc: str  # one line (markdown): the table's meaning, and .env.example's comment
    note: str = ""  # shown after the default in the table, e.g. "required"
    debug_default: str | None = None  # the default under DJANGO_DEBUG, when it differs
    attr: str = ""  # the Django setting it becomes, when not named as the variable

    @property
    def setting(self) -> str:
        return self.attr or self.name


@dataclass(frozen=True)
class Group:
    title: str  # the table's heading in docs/configuration.md
    settings: tuple[Setting, ...]
    intro: str = ""  # prose above the table


@dataclass(frozen=True)
class Fixed:
    """A former variable, now a constant (the Django setting ``attr or name`` holds it)."""

    name: str
    value: Any
    why: str
    attr: str = ""


S = Setting
# fmt: off
GROUPS: tuple[Group, ...] = (
    Group("The email service", (
        S("EMAIL_SERVICE_QUEUE_URL", "str", "", "the queue to consume (and to enqueue test sends and resends on); required for `consume_emails`, `enqueue_email`, send-test, resend, and, while `CLAIM_LEASE_SECONDS` is `0`, wherever a claim's length is needed (below)", "required"),
        S("TEMPLATES_TABLE", "str", "email-message-templates", "messageId → `TemplateFile`, `Subject`"),
        S("JOURNAL_TABLE", "str", "", "one row per (message, recipient)", "required"),
        S("S3_BUCKET", "str", "", "`default/{file}`, `custom/O{orgId}/{file}`", "required"),
        S("JOURNAL_TTL_DAYS", "int", "90", "journal rows expire (DynamoDB TTL on `ExpiresAt`)"),
        S("EMAIL_SENDER", "str", "", "the From header, `Display Name <address>`; if unset and `PENNSIEVE_DOMAIN` is set: `Pennsieve <support@{domain}>`. A control character in it (or in `EMAIL_REPLY_TO`) stops every process at start-up"),
        S("EMAIL_REPLY_TO", "str", "", "Reply-To; if unset and `PENNSIEVE_DOMAIN` is set: `support@{domain}`"),
        S("PENNSIEVE_DOMAIN", "str", "", "the domain the sender and Reply-To default to (see above)"),
    )),
    Group("Suppression, erasure and preferences", (
        S("SUPPRESSION_TABLE", "str", "email-suppression", "addresses never sent to again (hard bounces, complaints, by hand), shared with the Go service in its shape: key `Email` (each address as reported and as `address_key` spells it), `Reason` `bounce`/`complaint`/`manual`, `CreatedAt` RFC 3339. A table in our old shape (key `Address`) keeps working until `manage.py migrate_suppression_table --to <new>` has copied it and this names the new one ([deploy.md](deploy.md#running-beside-the-go-service))"),
        S("ERASURE_TOMBSTONE_TABLE", "str", "email-erasure-tombstones", "erasure's tombstones: a keyed hash of each erased address and when, never the address; every later write carrying it stores nothing personal ([journal.md](journal.md#erasure)); created by `bootstrap_aws`"),
        S("ERASURE_HASH_KEY", "str", "", "the tombstones' HMAC key. Set it on its own in production: a new `DJANGO_SECRET_KEY` without it makes earlier tombstones unrecognised", "derived from `DJANGO_SECRET_KEY`"),
        S("PREFERENCES_TABLE", "str", "email-preferences", "recipient preferences: one item per (`address_key`, category) a recipient unsubscribed from or re-subscribed to, with its last 20 changes; written and read by emailops only (the Go service never reads it); created by `bootstrap_aws`"),
        S("SES_ACCOUNT_SUPPRESSION_SYNC", "bool", "false", "mirror suppression additions/removals to SES's account-level list (sesv2; needs its permissions)"),
    )),
    Group("SES delivery events ([delivery-events.md](delivery-events.md))", (
        S("SES_CONFIGURATION_SET", "str", "emailops", "every email is sent with it (its event destination feeds delivery events; `bootstrap_aws` creates both); empty = none, and no delivery events"),
        S("SES_EVENTS_QUEUE_URL", "str", "", "the queue `consume_ses_events` reads (subscribed to the events topic)"),
        S("SES_EVENTS_TOPIC_ARNS", "list", "", "comma list: accept SNS messages only from these topics; required when signatures are verified (`bootstrap_aws` prints the value)", "any"),
        S("SES_EVENTS_NOTIFICATIONS_TOPIC_ARN", "str", "", "the Go service's SNS topic of SES identity notifications (`notificationType` Bounce/Complaint/Delivery): `bootstrap_aws` subscribes the events queue to it and `consume_ses_events` applies them beside event publishing, each event once. Add the ARN to `SES_EVENTS_TOPIC_ARNS` as well ([deploy.md](deploy.md#running-beside-the-go-service))", "none"),
        S("SES_EVENTS_VERIFY_SIGNATURES", "bool", "true", "verify SNS message signatures (v1 SHA1, v2 SHA256) and refuse bare events; a signed message older than 30 days goes to the events DLQ ([delivery-events.md](delivery-events.md))", debug_default="false"),
        S("SES_EVENTS_RAW_DELIVERY", "bool", "false", "the events queue is subscribed with raw delivery: accept bare events, trusting the queue policy alone ([deploy.md](deploy.md))"),
        S("SES_EVENTS_UNMATCHED_TABLE", "str", "email-delivery-events-unmatched", "events with no journal row, or of unknown kinds (TTL `ExpiresAt`)"),
        S("SES_SIMULATE_EVENTS", "bool", "false", "local stack only: after each send, publish the events SES's mailbox simulator would (`make run` turns it on)"),
    )),
    Group("The console and operations", (
        S("JOURNAL_GO_CUTOVER", "str", "", "when the Go consumer stopped writing (ISO date/time, UTC if no zone); bounds searches for its rows ([journal.md](journal.md)); empty = search them without a bound"),
        S("AUDIT_RETENTION_DAYS", "int", "400", "Celery beat prunes the audit trails (journal reads, mapping changes, resends, suppression removals, finished jobs) daily past this age; `0` keeps them"),
        S("TEMPLATE_CHECK_CLIENTS", "list", "gmail.desktop-webmail,gmail.ios,gmail.android,outlook.windows,outlook.macos,outlook.outlook-com,apple-mail.macos,apple-mail.ios,yahoo.desktop-webmail", "the email clients the template check's `client-support` rule counts, as caniemail names them (`family.platform`, comma list; its newest tested version each) ([templates.md](templates.md#the-publish-gate))"),
        S("SPAMD_ADDRESS", "str", "127.0.0.1:783", "`host:port` of the SpamAssassin daemon that scores each draft's render (`spam-score`); empty = not scored ([templates.md](templates.md#the-publish-gate))"),
        S("OPS_DLQ_CHECK_SECONDS", "int", "60", "how often Celery beat reads the dead-letter queue's depth (ERROR line and console banner when > 0; [operations.md](operations.md))"),
    )),
    Group("AWS", (
        S("AWS_REGION", "str", "", "the region of every AWS client", "`AWS_DEFAULT_REGION`, else `us-east-1`"),
    ), "boto3 reads its own variables as well: the standard credential chain (environment, shared config, instance or task role), and `AWS_ENDPOINT_URL`, which points every client at moto (the local stack, end-to-end tests; unset in production)."),
    Group("The email consumer", (
        S("CONSUMER_CONCURRENCY", "int", "16", "records (and recipients) one consumer process works on at once; `--concurrency` overrides it"),
        S("CLAIM_LEASE_SECONDS", "int", "0", "how long a claim lasts, ours and a Go-era row's (`Timestamp` + this): the one lease the consumer claims with and the console, `email_log`, the API, the events consumer and the stuck-claims check read rows by; `0` = the request queue's visibility timeout, read once per process when first needed (so those processes then need `EMAIL_SERVICE_QUEUE_URL` and `sqs:GetQueueAttributes`; without them they fail with `LeaseUnknown` rather than guess)"),
        S("RETRY_BACKOFF_BASE_SECONDS", "int", "30", "back-off after a transient failure: between half and all of min(cap, base * 2^(receives-1)), the re-enqueued copy's delay"),
        S("RETRY_MAX_SECONDS", "int", "86400", "transient trouble dead-letters a record only after this long since its first attempt (retries are fresh copies, so the queue's `maxReceiveCount` does not decide)"),
        S("SES_MAX_SEND_RATE", "str", "", "emails/s across every consumer on every machine; `0` = no limit; the local stack sets 50 (moto's quota says 1) ([send-rate.md](send-rate.md))", "SES `GetSendQuota` MaxSendRate, re-read every 5 min"),
        S("REDIS_URL", "str", "redis://127.0.0.1:6379/0", "the shared send-rate bucket (if unreachable each consumer limits itself alone, logged as ERROR, until it is back), the suppression index, the API tokens' and the unsubscribe page's per-minute counters"),
        S("SES_RATE_REDIS_KEY", "str", "emailops:ses-rate", "the bucket's key (and the reputation flags' prefix): one per SES account and region, so stacks sharing a Redis but not an account need their own"),
    )),
    Group("The send guard ([send-guard.md](send-guard.md))", (
        S("SEND_ENABLED", "bool", "true", "the Go service's service-wide send control: `false` journals every request log-only (`Status` SENT, `LoggedOnly` true, reason `service-stop`, no SES send) ([journal.md](journal.md))"),
        S("RATE_LIMIT_TABLE", "str", "email-rate-counter", "the send guard's counters, shared with the Go consumer (created by `bootstrap_aws`, TTL on `ExpiresAt`); empty = no rate safeguard and no loop detector"),
        S("SEND_RATE_LIMIT_PER_MINUTE", "int", "300", "sends per one-minute window across every consumer, ours and Go's; `0` = no cap"),
        S("PER_MESSAGE_RATE_LIMIT_PER_MINUTE", "int", "120", "sends of one messageId per one-minute window; `0` = no cap"),
        S("RATE_SAFEGUARD_OVER_CAP", "str", "hold", "over a cap: `hold` (the request waits on the queue, unclaimed, for the next window, at most an hour, then log-only) or `log-only` (the Go service's behaviour: journaled log-only at once). A counter error always holds"),
        S("LOOP_LIMIT_PER_HOUR", "int", "5", "more than this many different requests of one messageId to one recipient within a clock hour is a loop: further copies are log-only (reason loop), one ERROR line and one `ALERT_WEBHOOK_URL` alert; `0` = off"),
    )),
    Group("Reputation ([reputation.md](reputation.md))", (
        S("STATS_TABLE", "str", "email-stats", "hourly counters per account, messageId and organization (created by `bootstrap_aws`); empty = not counted"),
        S("REPUTATION_MIN_VOLUME", "int", "200", "below this many delivered-or-bounced sends in the 24-hour window a rate is not judged (`low_volume`)"),
        S("ALERT_WEBHOOK_URL", "str", "", "warn alerts are POSTed here as `{\"text\": ...}` (Slack incoming webhooks accept it)"),
    )),
    Group("Delivery webhooks ([webhooks.md](webhooks.md))", (
        S("WEBHOOK_OUTBOX", "str", "durable", "webhook events: `durable` (each written with its journal fact in one DynamoDB transaction, to `<JOURNAL_TABLE>-webhook-outbox`; a Celery task on `WEBHOOK_QUEUE` wakes the webhook worker, a sweep takes what a lost wake-up left; empty, or `celery`, means this too) or `off` (none emitted, the journal's plain writes; each process says so in one `capability.off` line)"),
        S("WEBHOOK_QUEUE", "str", "emailops-webhooks", "the Celery queue of the webhook tasks (run a worker on it: `celery -A emailops worker -Q emailops-webhooks`)"),
        S("WEBHOOK_RETRY_BASE_SECONDS", "int", "30", "the retry back-off's base: attempt *n*+1 waits between half and all of min(6 h, base * 2^(n-1)), for 3 days; shorten it for a test or a staging stack"),
        S("WEBHOOK_SECRET_KEYS", "list", "", "comma list of Fernet keys (`python -c 'from cryptography.fernet import Fernet; print(Fernet.generate_key().decode())'`) that seal the endpoints' signing secrets in the database: the first seals, every one opens (rotation: put the new key first, run `manage.py webhooks reseal`, then drop the old). Keys derived from `DJANGO_SECRET_KEY` and its fallbacks (HKDF-SHA256) always open too ([webhooks.md](webhooks.md#secrets-at-rest))", "derived from `DJANGO_SECRET_KEY`"),
    )),
    Group("Recipient preferences ([unsubscribe.md](unsubscribe.md))", (
        S("PUBLIC_BASE_URL", "str", "", "where the public unsubscribe page (`/u/<token>`) is reached from the internet, e.g. `https://emails.example.org` (no query, no trailing slash): categorised, non-critical mail then carries `List-Unsubscribe` and `List-Unsubscribe-Post` (RFC 8058) built on it, and its template gets `unsubscribeUrl`. Empty = no links and no List-Unsubscribe header, and the template check warns `unsubscribe-base-url` ([preferences.md](preferences.md))"),
        S("UNSUBSCRIBE_RATE_PER_CLIENT", "int", "300", "requests a minute to `/u/<token>` with a bad token from one client address (`REMOTE_ADDR`, or as `DJANGO_TRUSTED_PROXY_COUNT` says); past it the client gets 429 for every request until the minute ends. Requests with a good token never count (mailbox providers POST every one-click from a few servers). `0` = no limit"),
    )),
    Group("Django", (
        S("DJANGO_DEBUG", "bool", "false", "`false` is production: a strong secret key is required and HTTPS is on. `true` (devstack and the tests set it) allows the development key and plain http", attr="DEBUG"),
        S("DJANGO_SECRET_KEY", "str", "", "50+ characters, 5+ distinct (`python -c 'import secrets; print(secrets.token_urlsafe(64))'`); start-up fails with a message otherwise; with `DJANGO_DEBUG=true` empty means the development key", "required unless `DJANGO_DEBUG`", attr="SECRET_KEY"),
        S("DJANGO_SECRET_KEY_FALLBACKS", "list", "", "retired secret keys (comma list) whose signatures still verify and whose unsubscribe tokens still open. Rotating `DJANGO_SECRET_KEY`: move the old key here, so the unsubscribe links of emails already sent keep working, and the retry state sealed on queued copies and dead letters still counts ([send-guard.md](send-guard.md#in-the-console)); sessions signed by it stay valid too ([unsubscribe.md](unsubscribe.md#key-rotation))", attr="SECRET_KEY_FALLBACKS"),
        S("DJANGO_ALLOWED_HOSTS", "list", "localhost,127.0.0.1,[::1]", "the console's host name(s)", attr="ALLOWED_HOSTS"),
        S("DJANGO_CSRF_TRUSTED_ORIGINS", "list", "", "`https://` + that host", attr="CSRF_TRUSTED_ORIGINS"),
        S("DJANGO_HTTPS", "str", "proxy", "`proxy`: TLS ends at a load balancer that sets (and strips) `X-Forwarded-Proto`, as the ALB does; http redirects to https, cookies are https-only, HSTS for a year with subdomains and preload. `on`: the same, trusting no forwarded header (nothing in front sets and strips it). `off`: plain http (the local stack, `docker/compose.yml`)", debug_default="off", attr="HTTPS"),
        S("DJANGO_TRUSTED_PROXY_COUNT", "int", "0", "proxies in front that append to `X-Forwarded-For`. `0`: the login throttle's client address is the peer (`REMOTE_ADDR`) and the header is ignored, since a client reaching the app directly can write anything in it. **Behind the ALB set `1`**: the address is then that many entries from the right (the one the ALB appended), falling back to `REMOTE_ADDR`. Never set more than the proxies really in front", attr="TRUSTED_PROXY_COUNT"),
        S("DATABASE_URL", "db", "sqlite:///db.sqlite3", "the console's database (users, groups, audit, jobs), e.g. `postgres://user@127.0.0.1:5432/emailops`"),
        S("LOG_LEVEL", "str", "INFO", "level of the project's loggers (`emailops`, `worker`, `templates_admin`, `audit`, `monitoring`, `webhooks`, `jobs`); logfmt lines. Read as the Go service reads it: `DEBUG`, `INFO`, `WARN` (or `WARNING`), `ERROR` in any case, with an optional offset (`INFO+2`, `DEBUG-4`); Go's slog levels map to Python's 2.5 apart, so `INFO+2` is 25. An unknown value means `INFO` and one error line (`settings.log_level_unknown`), never a failed start"),
    )),
    Group("Celery", (
        S("CELERY_BROKER_URL", "str", "redis://127.0.0.1:6379/0", "Celery broker (jobs keep their own state in the database: no result backend)"),
        S("CELERY_TASK_DEFAULT_QUEUE", "str", "emailops", "the Redis list the workers read; `manage.py devstack` uses `emailops-devstack-{port}`"),
    )),
)
# fmt: on
SETTINGS: tuple[Setting, ...] = tuple(s for group in GROUPS for s in group.settings)
BY_NAME: dict[str, Setting] = {s.name: s for s in SETTINGS}

# fmt: off
FIXED: tuple[Fixed, ...] = (
    # The consumer
    Fixed("RETRY_BACKOFF_CAP_SECONDS", 900, "the back-off's cap is the most SQS allows a message's delay (900 s): a longer one could not be sent"),
    Fixed("CLAIM_SEND_MARGIN_SECONDS", 5, "a send starts only on a claim with this long left (else it is extended first): a safety margin, not a tuning knob"),
    Fixed("SES_QUOTA_PAUSE_SECONDS", 600, "after SES's \"Daily message quota exceeded\" every consumer pauses this long; the quota is SES's to raise, not ours to tune"),
    Fixed("SES_RATE_FALLBACK_CONSUMERS", 4, "without Redis each process sends at most the rate divided by this: a rough guess of the consumer count, for an outage"),
    Fixed("TEMPLATE_CACHE_SECONDS", 60, "consumers cache templates and mappings a minute (then revalidate by ETag); the console says so when a mapping changes"),
    Fixed("PREFERENCES_CACHE_SECONDS", 5, "an unsubscribe reaches every consumer within 5 s; shorter costs a read per categorised send"),
    Fixed("RATE_SAFEGUARD_HOLD_MAX_SECONDS", 3600, "a request held by the send guard an hour is journaled log-only: RATE_SAFEGUARD_OVER_CAP=log-only is the way not to hold"),
    Fixed("CONSUMER_METRICS_PORT", 0, "the consumer serves metrics only where its command line says `--metrics-port N` (docker/compose.yml, the Kubernetes manifest): each process's port is its own, never a shared setting"),
    Fixed("SUPPRESSION_INDEX_REDIS_KEY", None, "derived: the erasure tombstones' Redis set is `<SES_RATE_REDIS_KEY>:suppressed:erased`, one per SES account and region like the bucket (rebuilt from the table when missing); a test sets `\"\"` (no set) or its own prefix"),
    Fixed("STATS_FLUSH_SECONDS", 1.0, "reputation counters are written once a second per scope: longer only loses more counts to a SIGKILL"),
    # SES events
    Fixed("SES_EVENTS_MAX_AGE_SECONDS", 2_592_000, "30 days: above the oldest genuine event (SNS retries delivery to SQS for 23 days, the queue keeps a message 4); older signed messages are replays"),
    Fixed("SES_EVENTS_TOPIC_NAME", "email-ses-events", "the topic bootstrap_aws creates; the consumer trusts SES_EVENTS_TOPIC_ARNS, not this name"),
    Fixed("SES_EVENTS_CONCURRENCY", 16, "consume_ses_events --concurrency sets it per process"),
    # Reputation: below SES's own lines (review at 5 % bounces / 0.1 % complaints, pause at 10 % / 0.5 %)
    Fixed("REPUTATION_PAUSE_WAIT_SECONDS", 60, "a record the guard pauses looks again a minute later (it waits; no retry budget used): the guard judges every 5 minutes, so shorter only costs receives"),
    Fixed("REPUTATION_WINDOW_HOURS", 24, "rates over a day, as SES judges them"),
    Fixed("REPUTATION_WARN_BOUNCE_PERCENT", 2.0, "warn well below SES's 5 % review line"),
    Fixed("REPUTATION_WARN_COMPLAINT_PERCENT", 0.05, "warn at half SES's 0.1 % review line"),
    Fixed("REPUTATION_ACT_BOUNCE_PERCENT", 4.0, "act (bulk paused, normal slowed) before SES's 5 % review line"),
    Fixed("REPUTATION_ACT_COMPLAINT_PERCENT", 0.08, "act before SES's 0.1 % review line"),
    Fixed("REPUTATION_SLOW_SHARE", 0.25, "past the act line normal mail keeps a quarter of the send rate"),
    # Webhooks
    Fixed("WEBHOOK_TIMEOUT_SECONDS", 5.0, "one POST's whole budget; a receiver slower than that is failing"),
    Fixed("WEBHOOK_FAILING_AFTER", 10, "consecutive failed attempts before an endpoint is marked failing (one alert)"),
    Fixed("WEBHOOK_MAX_IN_FLIGHT", 4, "deliveries one endpoint may have in flight; protects the worker from one slow receiver"),
    Fixed("WEBHOOK_MAX_PER_MINUTE", 600, "attempts one endpoint may receive a minute"),
    Fixed("WEBHOOK_ROTATION_OVERLAP_HOURS", 24, "after a rotation the old secret signs beside the new one a day"),
    # Operations and the console
    Fixed("OPS_STUCK_CLAIMS_SECONDS", 3600, "beat looks for stuck claims hourly"),
    Fixed("OPS_SCAN_MAX_ITEMS", 20_000, "items one journal Scan may read (stuck claims per run, a bulk resend's selection): a cost bound"),
    Fixed("OPS_TEMPLATE_CHECK_HOUR", 3, "the daily template check runs at 03:00 UTC"),
    Fixed("OPS_DASHBOARD_DAYS", 7, "the front page charts a week"),
    Fixed("API_MAX_RECIPIENTS", 50, "the send API sends inline: the API's gunicorn timeout (docker/compose.yml) is sized for 50"),
    Fixed("UNSUBSCRIBE_RATE_PER_ADDRESS", 30, "30 requests a minute with a good token for one address (any category or spelling) is far above any person's clicks"),
    Fixed("JOURNAL_SENSITIVE_KEYS", ["password", "passwd", "secret", "token", "key", "credential", "signature", "session", "cookie", "otp", "link", "url", "code", "pin"], "context keys whose values the console masks: a privacy rule, changed in code"),
    Fixed("TEMPLATE_VARIABLES_PATH", Path(__file__).resolve().parent / "data" / "template-variables.json", "the manifest ships with the code"),
    Fixed("AWS_S3_ADDRESSING_STYLE", "auto", "botocore picks the S3 addressing style"),
    # Django and Celery
    Fixed("TIME_ZONE", "UTC", "the console shows UTC, as the journal and the logs do"),
    Fixed("DJANGO_SESSION_IDLE_SECONDS", 8 * 3600, "a console session ends after 8 idle hours", attr="SESSION_COOKIE_AGE"),
    Fixed("CELERY_RESULT_BACKEND", None, "jobs keep their own state in the database"),
    Fixed("CELERY_TASK_ALWAYS_EAGER", False, "tasks run on a worker (the tests set the Django setting)"),
)
# fmt: on

_HTTPS = "replaced by DJANGO_HTTPS (proxy, on or off)"
# Variables no longer read, and what took their place (FIXED's are added below).
RETIRED: dict[str, str] = {
    **{
        f"DJANGO_{name}": _HTTPS
        for name in (
            "SECURE_SSL_REDIRECT",
            "SESSION_COOKIE_SECURE",
            "CSRF_COOKIE_SECURE",
            "SECURE_HSTS_SECONDS",
            "SECURE_HSTS_INCLUDE_SUBDOMAINS",
            "SECURE_HSTS_PRELOAD",
            "SECURE_PROXY_SSL_HEADER",
        )
    },
    "WEBHOOK_ALLOW_LOOPBACK": "follows DJANGO_DEBUG: loopback endpoints in development only",
    # Issue 22's
    "TEMPLATE_CACHE_MAX_ENTRIES": "fixed at 1000 mappings and 1000 templates",
    "REPUTATION_REFRESH_SECONDS": "fixed: a consumer re-reads the shared pauses every 5 s",
    "SUPPRESSION_INDEX_MAX_AGE_SECONDS": "gone: the suppression check reads the table on every send (no index to rebuild)",
    "STATS_TTL_DAYS": "fixed: hourly counters are kept 400 days",
    "REPUTATION_CHECK_SECONDS": "fixed: beat judges the rates every 5 minutes",
    "REPUTATION_RESUME_HOLD_MINUTES": "fixed: a pause lifted by hand is not set again for an hour",
    "OPS_DASHBOARD_TOP": "fixed: the dashboard's tables show 10 rows",
    "OPS_READING_HISTORY_DAYS": "fixed: dead-letter depth readings are kept 35 days",
    **{f.name: f"fixed: {f.why}" for f in FIXED},
}


def read(env: Any, setting: Setting, *, debug: bool = False) -> Any:
    """One variable through django-environ (``env``), as declared."""
    default = setting.default
    if debug and setting.debug_default is not None:
        default = setting.debug_default
    if setting.kind == "db":
        return env.db_url(setting.name, default=default)
    return env.get_value(
        setting.name, cast=CASTS[setting.kind], default=default, parse_default=True
    )


def read_all(env: Any, *, debug: bool) -> dict[str, Any]:
    """Every declared variable, as the Django setting it becomes (``Setting.setting``), and every
    fixed value."""
    values = {s.setting: read(env, s, debug=debug) for s in SETTINGS}
    values.update({f.attr or f.name: f.value for f in FIXED})
    return values


def retired_in(environ: Mapping[str, str]) -> list[tuple[str, str]]:
    """(variable, what replaced it) for each retired variable still set."""
    return [(name, why) for name, why in RETIRED.items() if name in environ]


def report_retired(environ: Mapping[str, str], stream: TextIO | None = None) -> None:
    """One WARNING line per retired variable still set, written before logging is configured (the
    settings call it), so an operator is not silently ignored."""
    formatter = LogfmtFormatter()
    for name, why in retired_in(environ):
        record = logging.LogRecord(
            "emailops.settings", logging.WARNING, __file__, 0, "", None, None
        )
        record.msg = logfmt("settings.variable_retired", variable=name, now=why)
        print(formatter.format(record), file=stream or sys.stderr, flush=True)
