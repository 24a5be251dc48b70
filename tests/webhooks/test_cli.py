"""manage.py webhooks: add prints a secret that verifies what the delivery code signs; list never
shows a secret; rotate, disable, enable, remove; bad input is one line (a CommandError), never a
traceback."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.utils import timezone
from standardwebhooks.webhooks import Webhook

from emailops import container
from emailops.aws.journal_codec import row_from_item
from emailops.core.webhooks import sent_event
from tests.journal_factory import BASE_TIME, journal_row
from tests.webhooks.conftest import opened
from webhooks import delivery, destination
from webhooks.models import WebhookEndpoint

pytestmark = pytest.mark.django_db


def run(*args: str) -> str:
    out = StringIO()
    call_command("webhooks", *args, stdout=out)
    return out.getvalue()


def run_json(*args: str):
    return json.loads(run(*args, "--json"))


class OneRowReader:
    def __init__(self, row) -> None:
        self.row = row

    def read(self, key: str):
        return self.row if key == self.row.key else None


@pytest.fixture
def journal(loopback_webhooks):
    row = row_from_item(journal_row("erin@example.com", at=BASE_TIME))
    container.current().__dict__["journal"] = OneRowReader(row)
    return row


def deliver(row) -> list:
    event = sent_event(row.key, ses_message_id=row.ses_message_id, sent_at=BASE_TIME)
    now = datetime.now(UTC)
    return [
        delivery.delivery_attempt(i, adapters=container.current(), now=now)
        for i in delivery.fan_out(
            event.to_dict(), journal_reader=container.current().journal_reader
        )
    ]


def test_add_prints_the_id_and_a_secret_that_verifies_the_delivery(journal, receiver):
    out = run("add", receiver.url, "--description", "billing")
    endpoint = WebhookEndpoint.objects.get()
    assert f"#{endpoint.pk}" in out
    secret = out.split("secret (shown once; keep it to verify signatures): ")[1].strip()
    assert secret.startswith("whsec_") and secret == opened(endpoint.secret)

    assert [o.state for o in deliver(journal)] == ["delivered"]
    ((headers, body),) = receiver.received
    verified = Webhook(secret).verify(body, headers)
    assert verified["type"] == "email.sent" and verified["data"]["journalKey"] == journal.key
    assert {"webhook-id", "webhook-timestamp", "webhook-signature"} <= set(headers)


def test_add_with_filters_as_json(loopback_webhooks, receiver):
    added = run_json(
        "add",
        receiver.url,
        "--events",
        "email.bounced,email.delivered",
        "--events",
        "email.complained",
        "--message-id",
        "welcome",
        "--message-id",
        "added-to-team",
        "--organization",
        "367",
        "--producer",
        "api:12",
        "--include-context-keys",
    )
    assert added["secret"].startswith("whsec_")
    endpoint = WebhookEndpoint.objects.get(pk=added["id"])
    assert endpoint.event_types == ["email.bounced", "email.complained", "email.delivered"]
    assert endpoint.message_ids == ["added-to-team", "welcome"]
    assert endpoint.organization == "367" and endpoint.producer == "api:12"
    assert endpoint.include_context_keys
    assert added["producer"] == "api:12"


def test_producer_queue_means_the_queues_rows_only(loopback_webhooks, receiver):
    added = run_json("add", receiver.url, "--producer", "queue")
    assert WebhookEndpoint.objects.get(pk=added["id"]).producer == ""
    assert added["producer"] == "queue"
    assert WebhookEndpoint.objects.get(pk=run_json("add", receiver.url)["id"]).producer is None


def test_list_never_shows_a_secret(loopback_webhooks, receiver):
    first = run_json("add", receiver.url, "--events", "email.bounced")
    run_json("rotate", str(first["id"]))
    second = run_json("add", receiver.url, "--producer", "queue", "--description", "crm")
    endpoint = WebhookEndpoint.objects.get(pk=first["id"])
    secrets = {opened(endpoint.secret), opened(endpoint.previous_secret), second["secret"]}

    text, listed = run("list"), run_json("list")
    for output in (text, json.dumps(listed)):
        assert not any(s in output for s in secrets) and "whsec_" not in output
    assert [e["id"] for e in listed] == [first["id"], second["id"]]
    assert "secret" not in listed[0] and listed[0]["previous_secret_until"]
    assert f"#{first['id']}" in text and "events=email.bounced" in text
    assert "producer=queue" in text and "crm" in text


def test_list_when_there_are_none(db):
    assert run("list").strip() == "no webhook endpoints"
    assert run_json("list") == []


def test_rotate_prints_the_new_secret_and_when_the_old_stops(journal, receiver, settings):
    settings.WEBHOOK_ROTATION_OVERLAP_HOURS = 6
    container.reset()
    container.current().__dict__["journal"] = OneRowReader(journal)
    added = run_json("add", receiver.url)
    before = timezone.now()
    out = run("rotate", str(added["id"]))
    endpoint = WebhookEndpoint.objects.get()
    assert opened(endpoint.secret) in out and opened(endpoint.secret) != added["secret"]
    assert opened(endpoint.previous_secret) == added["secret"]
    until = endpoint.previous_secret_until
    assert before + timedelta(hours=6) <= until <= timezone.now() + timedelta(hours=6)
    assert f"{until:%Y-%m-%d %H:%M:%S}" in out and "WEBHOOK_ROTATION_OVERLAP_HOURS" in out

    deliver(journal)  # during the overlap, both verify
    ((headers, body),) = receiver.received
    Webhook(opened(endpoint.secret)).verify(body, headers)
    Webhook(added["secret"]).verify(body, headers)

    rotated = run_json("rotate", str(added["id"]))
    assert rotated["secret"] == opened(WebhookEndpoint.objects.get().secret)
    assert rotated["previous_secret_until"]


def test_disable_enable_remove(loopback_webhooks, receiver):
    endpoint_id = run_json("add", receiver.url)["id"]
    WebhookEndpoint.objects.filter(pk=endpoint_id).update(failing=True, consecutive_failures=12)
    assert "disabled: receiver migrating" in run(
        "disable", str(endpoint_id), "--reason", "receiver migrating"
    )
    endpoint = WebhookEndpoint.objects.get()
    assert not endpoint.enabled and endpoint.disabled_reason == "receiver migrating"
    assert "disabled (receiver migrating)" in run("list")

    assert run_json("enable", str(endpoint_id)) == {"id": endpoint_id, "enabled": True}
    endpoint.refresh_from_db()
    assert endpoint.enabled and not endpoint.failing and endpoint.consecutive_failures == 0
    assert endpoint.disabled_reason == ""

    assert "removed" in run("remove", str(endpoint_id))
    assert not WebhookEndpoint.objects.exists()


@pytest.mark.parametrize("action", ["rotate", "disable", "enable", "remove"])
def test_an_unknown_id_is_one_line(db, action):
    with pytest.raises(CommandError, match=r"^no webhook endpoint #404$"):
        run(action, "404")


def test_an_unknown_event_type_is_refused(loopback_webhooks, receiver):
    with pytest.raises(CommandError, match=r"unknown event type.*email\.bouncd") as refused:
        run("add", receiver.url, "--events", "email.delivered,email.bouncd")
    assert "email.bounced" in str(refused.value)  # the known ones are named
    assert not WebhookEndpoint.objects.exists()


@pytest.mark.parametrize(
    ("url", "addresses", "reason"),
    [
        ("http://hooks.example.com/x", ["93.184.216.34"], "HTTPS is required"),
        ("https://hooks.internal.test/x", ["10.1.2.3"], "10.1.2.3 is a private address"),
        ("https://metadata.test/x", ["169.254.169.254"], "private address"),
        ("https://127.0.0.1:9/x", ["127.0.0.1"], "loopback"),
        # Issue 32: carrier-grade NAT (neither private nor global to Python), its IPv4-mapped
        # IPv6 form, and credentials in the URL (refused without echoing the password).
        ("https://100.64.0.1/x", ["100.64.0.1"], "100.64.0.1 is a private address"),
        ("https://[::ffff:100.64.0.1]/x", ["::ffff:100.64.0.1"], "private address"),
        ("https://u:p4ss@example.org/", ["93.184.216.34"], "user information"),
        ("ftp://hooks.example.com/x", ["93.184.216.34"], "not an http(s) URL"),
        ("not a url", [], "not an http(s) URL"),
    ],
)
def test_a_refused_url_is_one_line(settings, db, monkeypatch, url, addresses, reason):
    settings.WEBHOOK_ALLOW_LOOPBACK = False
    container.reset()
    monkeypatch.setattr(destination, "resolve", lambda host, port: addresses)
    with pytest.raises(CommandError) as refused:
        run("add", url)
    message = str(refused.value)
    assert reason in message and "\n" not in message and "p4ss" not in message
    assert not WebhookEndpoint.objects.exists()
    container.reset()


def test_a_host_that_does_not_resolve_is_refused(db, monkeypatch):
    def fails(host, port):
        raise OSError("Name or service not known")

    monkeypatch.setattr(destination, "resolve", fails)
    with pytest.raises(CommandError, match="does not resolve"):
        run("add", "https://nowhere.invalid/hook")


@pytest.mark.parametrize("producer", ["api:", "api:abc", "tok_a", "Queue"])
def test_a_bad_producer_is_refused(loopback_webhooks, receiver, producer):
    with pytest.raises(CommandError, match=r"--producer must be queue or api:<token id>"):
        run("add", receiver.url, "--producer", producer)


def test_enable_and_disable_print_the_message_without_a_log_line(loopback_webhooks, receiver):
    """`webhooks enable` printed `ts=… level=info event=webhooks.endpoint_enabled …` before its
    message: the log's console handler shows WARNING and above while a person's command runs."""
    import logging

    from emailops.logging import LogfmtFormatter

    endpoint_id = run_json("add", receiver.url)["id"]
    [handler] = [
        h for h in logging.getLogger().handlers if isinstance(h.formatter, LogfmtFormatter)
    ]
    stream = StringIO()
    previous = handler.setStream(stream)
    try:
        said = run("disable", str(endpoint_id), "--reason", "moving") + run(
            "enable", str(endpoint_id)
        )
        logging.getLogger("webhooks").warning("after the command")  # the handler works again
    finally:
        handler.setStream(previous)

    assert said.splitlines() == [
        f"webhook endpoint #{endpoint_id} disabled: moving",
        f"webhook endpoint #{endpoint_id} enabled (the failing mark is cleared)",
    ]
    assert "level=info" not in stream.getvalue()
    assert "after the command" in stream.getvalue()
