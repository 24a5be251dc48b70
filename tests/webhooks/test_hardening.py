"""Issue 32, points 3-5: a retry schedule a test can shorten, the destination checked again at every
attempt (the address it resolves to now), and the endpoints' secrets sealed at rest: a database
dump alone cannot sign, keys rotate, existing secrets are migrated, and no command output or log
line after creation holds one."""

from __future__ import annotations

import importlib
import json
import logging
from datetime import UTC, datetime, timedelta
from io import StringIO

import pytest
from cryptography.fernet import Fernet
from django.apps import apps as django_apps
from django.core.exceptions import ImproperlyConfigured
from django.core.management import call_command
from django.db import connection
from standardwebhooks.webhooks import Webhook

from emailops import container
from emailops.aws.journal_codec import row_from_item
from emailops.config import Config
from emailops.config_values import webhook_secret_key_derived
from emailops.core.webhooks import sent_event
from tests.journal_factory import BASE_TIME, journal_row
from tests.webhooks.conftest import opened
from webhooks import delivery, destination, endpoints
from webhooks.models import WebhookDelivery, WebhookEndpoint
from webhooks.secrets import SecretUnreadable, seal, unseal

pytestmark = pytest.mark.django_db
sealing = importlib.import_module("webhooks.migrations.0002_sealed_secrets")


class OneRowReader:
    def __init__(self, row) -> None:
        self.row = row

    def read(self, key: str):
        return self.row if key == self.row.key else None


@pytest.fixture
def row(loopback_webhooks):
    found = row_from_item(journal_row("erin@example.com", at=BASE_TIME))
    container.current().__dict__["journal"] = OneRowReader(found)
    return found


def fresh(settings, **values) -> None:
    """New settings, and a container that reads them (with the row reader kept)."""
    reader = container.current().__dict__.get("journal")
    for name, value in values.items():
        setattr(settings, name, value)
    container.reset()
    if reader is not None:
        container.current().__dict__["journal"] = reader


def a_delivery(row, n: int = 1) -> int:
    event = sent_event(row.key, ses_message_id=f"ses-{n}", sent_at=BASE_TIME)
    (delivery_id,) = delivery.fan_out(
        event.to_dict(), journal_reader=container.current().journal_reader
    )
    return delivery_id


def attempt(delivery_id: int, now: datetime | None = None):
    return delivery.delivery_attempt(
        delivery_id, adapters=container.current(), now=now or datetime.now(UTC), random=lambda: 1.0
    )


def run(*args: str) -> str:
    out = StringIO()
    call_command("webhooks", *args, stdout=out)
    return out.getvalue()


# --- 3. Retries you can test -----------------------------------------------------------------


def test_a_shorter_retry_base_shortens_the_schedule(row, receiver, settings):
    endpoints.endpoint_add(adapters=container.current(), url=receiver.url)
    receiver.answers = [503, 503, 503]
    assert attempt(a_delivery(row, 1)).retry_in == 30  # the default base: 30 s, then 60 s...

    fresh(settings, WEBHOOK_RETRY_BASE_SECONDS=1)
    delivery_id, now, waits = a_delivery(row, 2), datetime.now(UTC), []
    for _ in range(3):
        outcome = attempt(delivery_id, now)
        waits.append(outcome.retry_in)
        now += timedelta(seconds=outcome.retry_in or 0)
    assert waits[:2] == [1, 2] and waits[2] is None  # the third answer is the receiver's 200
    assert WebhookDelivery.objects.get(pk=delivery_id).state == "delivered"


def test_a_retry_base_below_one_second_is_refused(settings):
    settings.WEBHOOK_RETRY_BASE_SECONDS = 0
    with pytest.raises(ImproperlyConfigured, match="WEBHOOK_RETRY_BASE_SECONDS"):
        Config.from_settings()


# --- 4. The destination, at every attempt ----------------------------------------------------


@pytest.mark.parametrize("address", ["100.64.0.1", "::ffff:100.64.0.1", "198.18.0.7"])
def test_each_attempt_checks_where_the_host_resolves_now(row, receiver, monkeypatch, address):
    monkeypatch.setattr(destination, "resolve", lambda host, port: ["127.0.0.1"])
    endpoints.endpoint_add(
        adapters=container.current(), url=receiver.url.replace("127.0.0.1", "hooks.test")
    )
    delivery_id = a_delivery(row)
    monkeypatch.setattr(destination, "resolve", lambda host, port: [address])
    outcome = attempt(delivery_id)
    assert outcome.state == "pending" and outcome.retry_in  # refused, never posted; retried
    assert receiver.received == []
    assert "private address" in WebhookDelivery.objects.get().log.get().error


def test_development_still_posts_to_loopback_and_production_does_not(row, receiver, settings):
    endpoint, _ = endpoints.endpoint_add(adapters=container.current(), url=receiver.url)
    assert attempt(a_delivery(row, 1)).state == "delivered"
    fresh(settings, WEBHOOK_ALLOW_LOOPBACK=False)  # emailops.settings: DEBUG off
    outcome = attempt(a_delivery(row, 2))
    assert outcome.state == "pending" and len(receiver.received) == 1
    refused = WebhookDelivery.objects.filter(endpoint=endpoint).first().log.get().error
    assert "HTTPS is required" in refused  # plain http to this machine: development's only


# --- 5. Secrets sealed at rest ---------------------------------------------------------------


def stored_columns() -> list[tuple[str, str]]:
    """What a dump of the endpoints' table holds."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT secret, previous_secret FROM templates_admin_webhookendpoint")
        return list(cursor.fetchall())


def test_a_database_dump_holds_no_secret_that_signs(row, receiver):
    endpoint, first = endpoints.endpoint_add(adapters=container.current(), url=receiver.url)
    second = endpoints.endpoint_rotate(
        adapters=container.current(), endpoint_id=endpoint.pk, now=datetime.now(UTC)
    )
    ((current, previous),) = stored_columns()
    for column in (current, previous):
        assert first not in column and second not in column and "whsec_" not in column
        assert first[6:] not in column and second[6:] not in column  # nor the key without prefix
    assert (opened(current), opened(previous)) == (second, first)
    # Without the key (another installation's DJANGO_SECRET_KEY) the dump opens nothing.
    elsewhere = webhook_secret_key_derived("another installation's secret key, long enough 123")
    with pytest.raises(SecretUnreadable):
        unseal(current, keys=[elsewhere])

    attempt(a_delivery(row))  # and the delivery still signs with both during the overlap
    ((headers, body),) = receiver.received
    Webhook(first).verify(body, headers)
    Webhook(second).verify(body, headers)


def test_the_default_key_is_derived_from_the_secret_key_and_its_fallbacks_still_open(settings):
    keys = Config.from_settings().webhooks.secret_keys
    assert keys == (webhook_secret_key_derived(settings.SECRET_KEY),)
    assert settings.SECRET_KEY not in keys[0]
    old = seal("whsec_b2xk", keys=keys)
    settings.SECRET_KEY_FALLBACKS = [settings.SECRET_KEY]
    settings.SECRET_KEY = "a new secret key for the console, fifty and more characters long!!"
    rotated = Config.from_settings().webhooks.secret_keys
    assert rotated[0] != keys[0] and unseal(old, keys=rotated) == "whsec_b2xk"
    assert "secret_keys" not in repr(Config.from_settings().webhooks)


def test_rotating_webhook_secret_keys_and_resealing(row, receiver, settings):
    one, two = Fernet.generate_key().decode(), Fernet.generate_key().decode()
    fresh(settings, WEBHOOK_SECRET_KEYS=[one])
    _, secret = endpoints.endpoint_add(adapters=container.current(), url=receiver.url)
    sealed = WebhookEndpoint.objects.get().secret
    assert unseal(sealed, keys=[one]) == secret
    fresh(settings, WEBHOOK_SECRET_KEYS=[two, one])  # the new key first: the old still opens
    assert attempt(a_delivery(row, 1)).state == "delivered"
    assert "1 endpoint(s) sealed again" in run("reseal")
    assert unseal(WebhookEndpoint.objects.get().secret, keys=[two]) == secret
    fresh(settings, WEBHOOK_SECRET_KEYS=[two])  # the old key dropped
    assert attempt(a_delivery(row, 2)).state == "delivered"
    for headers, body in receiver.received:
        Webhook(secret).verify(body, headers)


def test_a_secret_no_key_opens_fails_the_attempt_unposted_and_is_retried(row, receiver, caplog):
    endpoint, _ = endpoints.endpoint_add(adapters=container.current(), url=receiver.url)
    foreign = seal("whsec_Zm9yZWlnbg==", keys=[Fernet.generate_key().decode()])
    WebhookEndpoint.objects.filter(pk=endpoint.pk).update(secret=foreign)
    outcome = attempt(a_delivery(row))
    assert outcome.state == "pending" and outcome.retry_in and receiver.received == []
    assert "WEBHOOK_SECRET_KEYS" in WebhookDelivery.objects.get().log.get().error


def test_a_malformed_key_is_refused_at_start_up(settings):
    settings.WEBHOOK_SECRET_KEYS = ["not-a-fernet-key"]
    with pytest.raises(ImproperlyConfigured, match="WEBHOOK_SECRET_KEYS must be a comma list"):
        Config.from_settings()


def test_the_migration_seals_the_secrets_kept_in_clear_and_going_back_opens_them(db):
    plain = "whsec_cGxhaW4gc2VjcmV0IGtlcHQgaW4gY2xlYXI="
    previous = "whsec_b2xkIHNlY3JldCBrZXB0IGluIGNsZWFy"
    kept = WebhookEndpoint.objects.create(
        url="https://hooks.example.org/a", secret=plain, previous_secret=previous
    )
    WebhookEndpoint.objects.create(url="https://hooks.example.org/b", secret=plain)
    sealing.seal_stored(django_apps, None)
    columns = stored_columns()
    assert all(plain not in c and previous not in c for pair in columns for c in pair)
    kept.refresh_from_db()
    assert (opened(kept.secret), opened(kept.previous_secret)) == (plain, previous)
    assert [c[1] for c in columns][1] == ""  # no previous secret stays empty
    sealing.seal_stored(django_apps, None)  # again: sealed ones are left as they are
    assert stored_columns() == columns
    sealing.open_stored(django_apps, None)
    kept.refresh_from_db()
    assert (kept.secret, kept.previous_secret) == (plain, previous)


def test_the_migration_takes_user_information_out_of_stored_urls_and_disables_them(db):
    with_password = WebhookEndpoint.objects.create(
        url="https://crm:p4ss@hooks.example.org/in?x=1", secret="s"
    )
    plain = WebhookEndpoint.objects.create(url="https://hooks.example.org/in?who=a@b", secret="s")
    sealing.drop_user_information(django_apps, None)
    with_password.refresh_from_db()
    plain.refresh_from_db()
    assert with_password.url == "https://hooks.example.org/in?x=1" and not with_password.enabled
    assert "user:password@" in with_password.disabled_reason
    assert (plain.url, plain.enabled) == ("https://hooks.example.org/in?who=a@b", True)


def test_no_command_output_or_log_line_after_creation_holds_a_secret(row, receiver, caplog):
    caplog.set_level(logging.DEBUG)
    out = StringIO()
    call_command("webhooks", "add", receiver.url, "--json", stdout=out)
    added = json.loads(out.getvalue())
    secret = added["secret"]  # the one answer that shows it
    rotated = json.loads(run("rotate", str(added["id"]), "--json"))["secret"]
    attempt(a_delivery(row))
    stored = stored_columns()[0]
    later = [
        run("list"),
        run("list", "--json"),
        run("disable", str(added["id"])),
        run("enable", str(added["id"]), "--json"),
        run("reseal"),
    ]
    for text in [*later, caplog.text]:
        for value in (secret, rotated, *stored):
            assert value not in text
        assert "whsec_" not in text
