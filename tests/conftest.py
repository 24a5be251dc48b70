"""Shared fixtures: moto in-process AWS with the service's resources, the stack of real processes
(moto server, consumers: tests/support/stack.py) for the end-to-end and fault suites, and request
fixtures."""

from __future__ import annotations

import io
import json
import os
import random
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.stack import MotoServer, Stack

CONTRACT = Path(__file__).parent / "contract"
SAMPLES = Path(__file__).parent.parent / "emailops" / "data" / "samples"

# Strictness in CI: a test that needs a service must fail, not skip, when CI promised it.
REQUIRE_SERVICES = os.environ.get("EMAILOPS_REQUIRE_SERVICES") == "1"


def pytest_configure(config) -> None:
    # One seed for the fault suite's whole run: chosen here, before pytest-xdist starts its
    # workers, which inherit this environment (tests/faults/conftest.py reads it).
    os.environ.setdefault("FAULTS_SEED", str(random.randrange(1_000_000)))


# Files of real processes and waits, longest first (measured on this 2-core machine: 30-130 s
# each, against a few seconds for most files). ``make test`` keeps this order
# (--no-loadscope-reorder): xdist's default puts the files with the most tests first, which left
# these one-test files to the end, where one of them kept a worker busy while the other idled.
SLOWEST_FIRST = (
    "tests/production/",
    "tests/faults/test_chaos.py",
    "tests/faults/test_leases_and_stop.py",
    "tests/faults/test_outage.py",
    "tests/faults/test_attributes.py",
    "tests/faults/test_webhook_outage.py",  # a broker outage, kills, retries: ~90 s
    "tests/e2e/test_templates_cli_e2e.py",
    "tests/e2e/test_reputation_e2e.py",
    "tests/e2e/test_send_guard_e2e.py",  # waits for the next wall-clock minute
    "tests/e2e/test_preferences_e2e.py",
    "tests/e2e/test_whole_by_default_e2e.py",  # the whole devstack, then a webhook delivery
    "tests/e2e/",
    "tests/faults/",
    "tests/worker/",
    "tests/aws/test_journal_events.py",  # three full-timeline cases, ~11 s each
)


def pytest_collection_modifyitems(session, config, items) -> None:
    def rank(item) -> int:
        path = item.nodeid.split("::", 1)[0]
        return next(
            (i for i, prefix in enumerate(SLOWEST_FIRST) if path.startswith(prefix)),
            len(SLOWEST_FIRST),
        )

    items.sort(key=rank)  # stable: a file's tests keep their order


def pytest_collection_finish(session) -> None:
    _freeze_heap()


def _freeze_heap() -> None:
    """Move every object alive now (modules, Django, botocore's models, moto's backends) out of
    the garbage collector's reach: a full collection walks them all, and with this process's
    heap that was a third of the CPU time of a moto test. Garbage is collected first."""
    import gc

    gc.collect()
    gc.freeze()


def pytest_report_header(config) -> str:
    return f"fault suite seed: FAULTS_SEED={os.environ['FAULTS_SEED']} (set it to replay a run)"


def _share_botocore_models() -> None:
    """Every boto3 session reads and parses the services' JSON models anew (~45 ms per client
    here), and the tests make a new session after every ``container.reset()``. The models are the
    same files for every session of the process: one loader, and its cache, for all of them."""
    import functools

    import botocore.loaders
    import botocore.session

    botocore.session.create_loader = functools.cache(botocore.loaders.create_loader)


_share_botocore_models()


def skip_or_fail(reason: str) -> None:
    """Skip with a reason locally; fail in CI, where every service is supposed to be there."""
    if REQUIRE_SERVICES:
        pytest.fail(f"required service missing: {reason}")
    pytest.skip(reason)


def fixture_body(name: str) -> str:
    return (CONTRACT / "fixtures" / name).read_text()


# Consumers started by end-to-end tests: moto's GetSendQuota says 1 email/s (SES's sandbox), which
# would make every run crawl; a unique Redis key keeps parallel runs from sharing one bucket.
E2E_SEND_RATE = {"SES_MAX_SEND_RATE": "50", "SES_RATE_REDIS_KEY": f"emailops-e2e:{os.getpid()}"}


@pytest.fixture(scope="module")
def moto_server() -> Iterator[MotoServer]:
    """``python -m moto.server`` in its own process, one per test module."""
    try:
        server = MotoServer()
    except RuntimeError as exc:
        skip_or_fail(f"moto server: {exc}")
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="module")
def e2e_stack_options() -> dict:
    """Keyword arguments for the module's ``e2e_stack``; a test module overrides this fixture to
    add delivery events or environment (``extra_env`` is merged into the defaults)."""
    return {}


@pytest.fixture(scope="module")
def e2e_stack(moto_server, e2e_stack_options) -> Iterator[Stack]:
    """The end-to-end stack, one per test module: the module's own moto server bootstrapped with
    the service's resources and the sample templates; consumers run as ``manage.py`` processes
    (``stack.consume()``, ``stack.start_consumer(...)``), all killed when the module is done."""
    options = dict(e2e_stack_options)
    extra_env = {
        "LOG_LEVEL": os.environ.get("LOG_LEVEL", "INFO"),  # the tests read the consumers' log lines
        "RETRY_BACKOFF_BASE_SECONDS": "30",
        **E2E_SEND_RATE,
        **options.pop("extra_env", {}),
    }
    options = {"bucket": "emailops-e2e", "visibility_timeout": 60, **options}
    stack = Stack(moto_server, extra_env=extra_env, **options)
    try:
        yield stack
    finally:
        stack.close()


@pytest.fixture
def aws_env(monkeypatch):
    """Credentials and region for moto; never a real endpoint."""
    monkeypatch.delenv("AWS_ENDPOINT_URL", raising=False)
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    for name, value in {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_SESSION_TOKEN": "testing",
        "AWS_DEFAULT_REGION": "us-east-1",
    }.items():
        monkeypatch.setenv(name, value)


# What the ``aws`` fixture points settings at; ``aws_events`` adds the second group.
AWS_SETTINGS = {
    "TEMPLATES_TABLE": "email-message-templates",
    "JOURNAL_TABLE": "email-journal",
    "SUPPRESSION_TABLE": "email-suppression",
    "PREFERENCES_TABLE": "email-preferences",
    "STATS_TABLE": "email-stats",
    "S3_BUCKET": "emailops-templates",
    "AWS_REGION": "us-east-1",
    "EMAIL_SENDER": "Pennsieve <support@pennsieve.test>",
    "EMAIL_REPLY_TO": "support@pennsieve.test",
    "TEMPLATE_CACHE_SECONDS": 0,
    "SES_MAX_SEND_RATE": "0",  # moto's GetSendQuota says 1/s; tests set a rate where they need one
}
AWS_EVENTS_SETTINGS = {
    "SES_EVENTS_UNMATCHED_TABLE": "email-delivery-events-unmatched",
    "SES_EVENTS_VERIFY_SIGNATURES": False,
    "SES_EVENTS_TOPIC_ARNS": [],
}
# Per test process: the moto state right after provisioning, "base" and "events" (see
# tests/support/moto_snapshot.py). Built by the first test that asks for it.
_MOTO_SNAPSHOTS: dict[str, object] = {}


def _provision(*, events: bool):
    """Create the service's resources in the running in-process moto through the product's own
    provisioning, and capture moto's state. Runs once per test process and kind."""
    from django.test import override_settings

    from emailops import container
    from emailops.aws import provision, provision_events
    from emailops.aws.webhook_outbox import outbox_table
    from tests.support.moto_snapshot import MotoSnapshot

    quiet = lambda _line: None  # noqa: E731
    # Whatever the first test set before asking for the stack must not reach the snapshot: a
    # simulating sender would create its SNS topic in every later test's account.
    pinned = {
        **AWS_SETTINGS,
        **(AWS_EVENTS_SETTINGS if events else {}),
        "SES_SIMULATE_EVENTS": False,
    }
    with override_settings(**pinned):
        from django.conf import settings

        container.reset()
        built = container.current()
        dynamodb, sqs = built.client("dynamodb"), built.client("sqs")
        provision.ensure_templates_table(dynamodb, settings.TEMPLATES_TABLE, quiet)
        provision.ensure_journal_table(dynamodb, settings.JOURNAL_TABLE, quiet)
        provision.ensure_webhook_outbox_table(dynamodb, outbox_table(settings.JOURNAL_TABLE), quiet)
        provision.ensure_suppression_table(dynamodb, settings.SUPPRESSION_TABLE, quiet)
        provision.ensure_tombstone_table(dynamodb, settings.ERASURE_TOMBSTONE_TABLE, quiet)
        provision.ensure_preferences_table(dynamodb, settings.PREFERENCES_TABLE, quiet)
        provision.ensure_stats_table(dynamodb, settings.STATS_TABLE, quiet)
        provision.ensure_rate_counter_table(dynamodb, settings.RATE_LIMIT_TABLE, quiet)
        facts = {
            "EMAIL_SERVICE_QUEUE_URL": provision.ensure_queue(
                sqs, "email-service-queue", quiet, visibility_timeout=30
            )
        }
        built.template_store.create_bucket()
        built.sender.verify_sender("support@pennsieve.test")
        if events:
            facts["SES_EVENTS_QUEUE_URL"] = provision.ensure_queue(
                sqs, "email-ses-events", quiet, visibility_timeout=30
            )
            provision.ensure_unmatched_events_table(
                dynamodb, settings.SES_EVENTS_UNMATCHED_TABLE, quiet
            )
            facts["topic_arn"] = provision_events.ensure_events_topic(
                built.client("sns"),
                sqs,
                "email-ses-events",
                facts["SES_EVENTS_QUEUE_URL"],
                quiet,
            )
        container.reset()
    return MotoSnapshot.capture(**facts)


@pytest.fixture
def aws(aws_env, settings, request):
    """moto in-process with the templates, journal, suppression and stats tables, queue + DLQ,
    bucket and a verified sender; settings point at them. Yields a small namespace of clients
    and names (``AwsStack``).

    Each test starts from the just-provisioned account: the first test of a process provisions
    through boto3 and moto's state is copied; every later test gets a fresh copy of that state
    (tests/support/moto_snapshot.py), with nothing left from the tests before it. A test that
    asks for ``aws_events`` gets the copy that includes the delivery-event resources."""
    from moto import mock_aws

    from emailops import container
    from tests.support.moto_atomic import atomic_dynamodb_writes

    kind = "events" if "aws_events" in request.fixturenames else "base"
    with mock_aws(), atomic_dynamodb_writes():
        if kind not in _MOTO_SNAPSHOTS:
            _MOTO_SNAPSHOTS[kind] = _provision(events=kind == "events")
            _freeze_heap()  # botocore's models and the snapshot live as long as the process
        snapshot = _MOTO_SNAPSHOTS[kind]
        snapshot.restore()
        container.reset()
        for name, value in AWS_SETTINGS.items():
            setattr(settings, name, value)
        settings.EMAIL_SERVICE_QUEUE_URL = snapshot.facts["EMAIL_SERVICE_QUEUE_URL"]
        yield AwsStack(
            queue_url=settings.EMAIL_SERVICE_QUEUE_URL,
            facts=snapshot.facts,
        )
        container.reset()


@pytest.fixture
def aws_events(aws, settings):
    """The ``aws`` stack plus delivery events: events queue + DLQ, unmatched-events table, SNS
    topic subscribed by the queue (SNS envelope). Signatures off, as on the local stack."""
    from emailops import container

    for name, value in AWS_EVENTS_SETTINGS.items():
        setattr(settings, name, value)
    settings.SES_EVENTS_QUEUE_URL = aws.facts["SES_EVENTS_QUEUE_URL"]
    aws.topic_arn = aws.facts["topic_arn"]
    aws.events_queue_url = settings.SES_EVENTS_QUEUE_URL
    container.reset()
    return aws


class AwsStack:
    """Clients and names of the ``aws`` fixture's stack. Its clients (``dynamodb``, ``sqs``,
    ``ses``, ``sns``) are the current container's, as the product's adapters use them: a hook
    registered on one sees the adapters' calls."""

    _CLIENTS = ("dynamodb", "sqs", "ses", "sns")

    def __init__(self, **kwargs):
        self.__dict__.update(kwargs)

    def __getattr__(self, name: str):
        if name not in self._CLIENTS:
            raise AttributeError(name)
        from emailops import container

        return container.current().client(name)

    @property
    def dlq_url(self) -> str:
        return self.queue_url + "-dlq"

    def load_samples(self) -> None:
        from django.core.management import call_command

        out = io.StringIO()
        call_command("load_templates", str(SAMPLES / "templates"), stdout=out)
        call_command("load_template_mappings", str(SAMPLES / "mappings.json"), stdout=out)

    def sent_emails(self) -> list:
        from moto.core import DEFAULT_ACCOUNT_ID
        from moto.ses.models import ses_backends

        return list(ses_backends[DEFAULT_ACCOUNT_ID]["us-east-1"].sent_messages)

    def queue_messages(self, url: str, max_messages: int = 10) -> list[dict]:
        response = self.sqs.receive_message(
            QueueUrl=url,
            MaxNumberOfMessages=max_messages,
            MessageAttributeNames=["All"],
            VisibilityTimeout=0,
        )
        return response.get("Messages", [])


@pytest.fixture
def dedupe_reference() -> dict:
    return json.loads((CONTRACT / "dedupe-keys.json").read_text())["keys"]


@pytest.fixture(autouse=True)
def fast_password_hasher(settings):
    """Tests create many users; the production hasher's work factor only slows them down."""
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


def ensure_console_groups() -> None:
    """The groups the data migration creates. Transactional tests flush the database between
    cases, and with it the migration's rows, so tests that need the groups recreate them."""
    from django.contrib.auth.models import Group, Permission

    from templates_admin.roles import GROUP_PERMISSIONS

    for name, perms in GROUP_PERMISSIONS.items():
        group, created = Group.objects.get_or_create(name=name)
        if created:
            for perm in perms:
                app_label, codename = perm.split(".", 1)
                group.permissions.add(
                    Permission.objects.get(content_type__app_label=app_label, codename=codename)
                )


@pytest.fixture
def make_user(db, django_user_model):
    """make_user("Support") → a staff user in that group (None: staff without a group)."""
    from django.contrib.auth.models import Group

    ensure_console_groups()

    def make(group: str | None = None, *, superuser: bool = False, username: str | None = None):
        name = username or (group or ("root" if superuser else "nogroup")).lower().replace(" ", "-")
        user = django_user_model.objects.create_user(
            username=name,
            email=f"{name}@example.com",
            password="pw-for-tests",
            is_staff=True,
            is_superuser=superuser,
        )
        if group:
            user.groups.add(Group.objects.get(name=group))
        return user

    return make


@pytest.fixture
def redis_key():
    """A Redis key of this test's own (test runs share the machine's Redis); it and the keys
    named after it (``NAME:…``) are removed afterwards. Skips, or fails in CI, without Redis."""
    import uuid

    import redis

    url = os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/0")
    client = redis.Redis.from_url(url, socket_connect_timeout=1, socket_timeout=1)
    try:
        client.ping()
    except redis.RedisError as exc:
        skip_or_fail(f"Redis is not reachable at {url}: {exc}")
    name = f"emailops-test:{uuid.uuid4().hex}"
    yield name
    client.delete(name, *client.keys(f"{name}:*"))
    client.close()
