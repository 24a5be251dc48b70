"""The webhook rules: ids, payloads, filters, back-off, signing and the SSRF check."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from standardwebhooks.webhooks import Webhook, WebhookVerificationError

from emailops.core import webhook_delivery, webhook_payload, webhooks
from emailops.core.journal_row import JournalRow

ROW = JournalRow(
    key="k1",
    message_id="welcome",
    recipient="erin@example.com",
    producer="tok_a",
    template_version="v3",
    context={"organizationId": 7, "password": "hunter2", "name": "Erin"},
)


def test_the_same_fact_has_the_same_id_and_another_fact_another():
    one = webhooks.sent_event("k1", ses_message_id="ses-1", sent_at=1_700_000_000)
    again = webhooks.sent_event("k1", ses_message_id="ses-1", sent_at=1_700_000_999)
    other = webhooks.sent_event("k2", ses_message_id="ses-1", sent_at=1_700_000_000)
    assert one.id == again.id != other.id
    assert one.id.startswith("evt_")


def test_payload_never_carries_context_values_and_keys_only_when_asked():
    event = webhooks.sent_event("k1", ses_message_id="ses-1", sent_at=0)
    plain = webhook_payload.payload(event, ROW, organization="7")
    assert "hunter2" not in webhook_delivery.body_of(plain)
    assert "contextKeys" not in plain["data"]
    keys = webhook_payload.payload(event, ROW, organization="7", context_keys=True)
    assert keys["data"]["contextKeys"] == ["name", "organizationId", "password"]
    assert "hunter2" not in webhook_delivery.body_of(
        keys
    ) and "Erin" not in webhook_delivery.body_of(keys)
    assert plain["data"] | {"sesMessageId": "ses-1"} == plain["data"]
    assert plain["data"]["templateVersion"] == "v3"


def test_filters():
    anyone = webhook_delivery.WebhookFilter()
    assert anyone.matches("email.sent", ROW, "7")
    assert not webhook_delivery.WebhookFilter(event_types=frozenset({"email.bounced"})).matches(
        "email.sent", ROW, "7"
    )
    assert webhook_delivery.WebhookFilter(message_ids=frozenset({"welcome"})).matches(
        "email.sent", ROW, "7"
    )
    assert not webhook_delivery.WebhookFilter(organization="8").matches("email.sent", ROW, "7")
    assert webhook_delivery.WebhookFilter(producer="tok_a").matches("email.sent", ROW, "7")
    assert not webhook_delivery.WebhookFilter(producer="tok_b").matches("email.sent", ROW, "7")
    assert not webhook_delivery.WebhookFilter(producer="").matches("email.sent", ROW, "7")


def test_a_shorter_base_shortens_the_whole_schedule_under_the_same_cap():
    default = [webhook_delivery.retry_delay(n, random=lambda: 1.0) for n in range(1, 8)]
    short = [webhook_delivery.retry_delay(n, random=lambda: 1.0, base=1) for n in range(1, 8)]
    assert default == [30, 60, 120, 240, 480, 960, 1920]
    assert short == [1, 2, 4, 8, 16, 32, 64]
    assert webhook_delivery.retry_delay(40, random=lambda: 1.0, base=1) == (
        webhook_delivery.RETRY_CAP_SECONDS
    )


def test_back_off_grows_is_jittered_and_spans_about_three_days():
    low = [webhook_delivery.retry_delay(n, random=lambda: 0.0) for n in range(1, 30)]
    high = [webhook_delivery.retry_delay(n, random=lambda: 1.0) for n in range(1, 30)]
    assert low[0] == 15 and high[0] == 30
    assert low == sorted(low) and max(high) == webhook_delivery.RETRY_CAP_SECONDS
    assert (
        webhook_delivery.retryable(None)
        and webhook_delivery.retryable(429)
        and webhook_delivery.retryable(503)
    )
    assert not webhook_delivery.retryable(400) and not webhook_delivery.retryable(410)


def test_signatures_verify_with_standardwebhooks_and_a_rotation_signs_with_both():
    old, new = webhook_delivery.new_secret(), webhook_delivery.new_secret()
    assert old.startswith("whsec_")
    body = '{"a":1}'
    headers = webhook_delivery.sign("evt_1", datetime.now(UTC), body, [new, old])
    assert Webhook(old).verify(body, headers) == {"a": 1}
    assert Webhook(new).verify(body, headers) == {"a": 1}
    only_new = webhook_delivery.sign("evt_1", datetime.now(UTC), body, [new])
    with pytest.raises(WebhookVerificationError):
        Webhook(old).verify(body, only_new)


def _resolver(addresses):
    return lambda host, port: addresses


@pytest.mark.parametrize(
    "address",
    [
        *("10.0.0.5", "192.168.1.1", "172.16.0.1", "169.254.169.254", "::1", "fd00::1"),
        # Issue 32: only globally routable unicast addresses. Carrier-grade NAT (neither private
        # nor global to Python), IETF assignments, benchmarking, class E, multicast...
        *("100.64.0.1", "100.127.255.254", "192.0.0.9", "198.18.0.1", "240.0.0.1"),
        *("224.0.0.1", "239.255.255.250", "ff02::1", "0.0.0.0", "::"),
        # ... and each IPv4 one carried in IPv6: mapped, NAT64, 6to4.
        *("::ffff:100.64.0.1", "::ffff:10.0.0.1", "::ffff:127.0.0.1", "64:ff9b::a00:1"),
        "2002:a00:1::",
    ],
)
def test_private_destinations_are_refused(address):
    with pytest.raises(webhook_delivery.WebhookRefused):
        webhook_delivery.check_destination(
            "https://hooks.example.com/x",
            resolve=_resolver([address]),
            allow_loopback=False,
            require_https=True,
        )


def test_loopback_only_where_allowed_and_http_only_to_loopback():
    check = webhook_delivery.check_destination
    assert check(
        "http://localhost:8000/h",
        resolve=_resolver(["127.0.0.1"]),
        allow_loopback=True,
        require_https=False,
    ) == ["127.0.0.1"]
    with pytest.raises(webhook_delivery.WebhookRefused, match="HTTPS"):
        check(
            "http://x.example/h",
            resolve=_resolver(["93.184.216.34"]),
            allow_loopback=False,
            require_https=True,
        )
    with pytest.raises(webhook_delivery.WebhookRefused, match="loopback"):
        check(
            "http://x.example/h",
            resolve=_resolver(["93.184.216.34"]),
            allow_loopback=True,
            require_https=False,
        )
    assert check(
        "https://x.example/h",
        resolve=_resolver(["93.184.216.34"]),
        allow_loopback=False,
        require_https=True,
    )


@pytest.mark.parametrize(
    "url", ["https://u:p4ss@example.org/", "https://token@example.org/x", "https://:p4ss@x.org/"]
)
def test_a_url_with_user_information_is_refused_without_naming_the_password(url):
    with pytest.raises(webhook_delivery.WebhookRefused, match="user information") as refused:
        webhook_delivery.check_destination(
            url, resolve=_resolver(["93.184.216.34"]), allow_loopback=True, require_https=False
        )
    assert "p4ss" not in refused.value.describe() and "token@" not in refused.value.describe()


def test_public_addresses_pass_in_both_families():
    for address in ("93.184.216.34", "2606:4700::1111", "64:ff9b::5db8:d822"):
        assert webhook_delivery.check_destination(
            "https://x.example/h",
            resolve=_resolver([address]),
            allow_loopback=False,
            require_https=True,
        ) == [address]
