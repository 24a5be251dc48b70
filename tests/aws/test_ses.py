"""SesSender against moto: what SES receives, and refusals as permanent SendRejected errors; SES's
throttling answers (botocore's Stubber: moto never throttles) as the core's transient errors."""

from __future__ import annotations

import boto3
import pytest
from botocore.stub import Stubber

from emailops import container
from emailops.aws.ses import SendQuota, SesSender
from emailops.core.delivery_events import JOURNAL_KEY_TAG, encode_journal_key
from emailops.core.errors import (
    ConfigurationFault,
    DailyQuotaExceeded,
    SendRejected,
    SendThrottled,
    TransientError,
)
from emailops.core.ports import OutgoingEmail

EMAIL = OutgoingEmail(
    from_address="Pennsieve <support@pennsieve.test>",
    to="Alice Example <alice@example.com>",
    subject="Dataset “My Dataset” accepted & published",
    html="<p>Hello <b>Alice</b> — ✓</p>",
    text="Hello Alice — ✓\n",
    reply_to=("support@pennsieve.test", "help@pennsieve.test"),
)


@pytest.fixture
def sender(aws) -> SesSender:
    return container.current().sender


@pytest.fixture
def requests(sender):
    """The parameters of each SendEmail call, as botocore builds them (moto keeps only some)."""
    seen: list[dict] = []

    def record(params, **_):
        seen.append(params)

    sender.client.meta.events.register("provide-client-params.ses.SendEmail", record)
    yield seen
    sender.client.meta.events.unregister("provide-client-params.ses.SendEmail", record)


def test_before_send_runs_once_the_request_is_built_and_before_it_reaches_ses(
    aws, sender, requests
):
    seen: list[tuple[int, int]] = []
    sender.send(EMAIL, before_send=lambda: seen.append((len(requests), len(aws.sent_emails()))))
    assert seen == [(1, 0)]  # parameters built, nothing at SES yet
    assert len(aws.sent_emails()) == 1
    sender.send(EMAIL)  # a send without one is not held by the last one's
    assert seen == [(1, 0)] and len(aws.sent_emails()) == 2


def test_what_before_send_raises_propagates_as_it_is_and_nothing_is_sent(aws, sender):
    class Held(Exception):
        pass

    def hold() -> None:
        raise Held("the pause is in force")

    with pytest.raises(Held):
        sender.send(EMAIL, before_send=hold)
    assert aws.sent_emails() == []


def test_send(aws, sender, requests):
    message_id = sender.send(EMAIL)
    [sent] = aws.sent_emails()
    assert message_id == sent.id
    assert sent.source == "Pennsieve <support@pennsieve.test>"
    assert sent.destinations["ToAddresses"] == ["Alice Example <alice@example.com>"]
    assert sent.subject == EMAIL.subject
    assert sent.body == EMAIL.html
    [params] = requests
    assert params["ReplyToAddresses"] == ["support@pennsieve.test", "help@pennsieve.test"]
    assert params["Message"]["Body"] == {
        "Html": {"Data": EMAIL.html, "Charset": "UTF-8"},
        "Text": {"Data": EMAIL.text, "Charset": "UTF-8"},
    }
    assert params["Message"]["Subject"] == {"Data": EMAIL.subject, "Charset": "UTF-8"}
    assert params["Destination"] == {"ToAddresses": [EMAIL.to]}


def test_send_without_text_or_reply_to(aws, sender, requests):
    email = OutgoingEmail(
        from_address=EMAIL.from_address, to="bob@example.com", subject="S", html="<p>x</p>"
    )
    sender.send(email)
    [params] = requests
    assert params["Message"]["Body"] == {"Html": {"Data": "<p>x</p>", "Charset": "UTF-8"}}
    assert params["ReplyToAddresses"] == []
    assert aws.sent_emails()[0].destinations["ToAddresses"] == ["bob@example.com"]


def test_each_send_gets_its_own_id(aws, sender):
    ids = {sender.send(EMAIL) for _ in range(3)}
    assert len(ids) == 3
    assert len(aws.sent_emails()) == 3


def test_unverified_sender_is_a_configuration_fault_not_the_emails(aws, sender):
    email = OutgoingEmail(from_address="nobody@unverified.test", to=EMAIL.to, subject="S", html="x")
    with pytest.raises(ConfigurationFault) as info:
        sender.send(email)
    assert not info.value.permanent and "verify the sender" in info.value.fix
    assert "MessageRejected" in info.value.reason
    assert info.value.key == EMAIL.to
    assert aws.sent_emails() == []


def test_invalid_recipient_is_rejected_for_good(aws, sender):
    email = OutgoingEmail(
        from_address=EMAIL.from_address, to="not an address", subject="S", html="x"
    )
    with pytest.raises(SendRejected):
        sender.send(email)
    assert aws.sent_emails() == []


def test_verify_sender(aws, sender):
    sender.verify_sender("new@pennsieve.test")
    assert "new@pennsieve.test" in aws.ses.list_identities()["Identities"]
    sender.send(
        OutgoingEmail(from_address="new@pennsieve.test", to=EMAIL.to, subject="S", html="x")
    )
    assert len(aws.sent_emails()) == 1


# --- The send quota and SES's two kinds of "Throttling" -------------------------------------------


def test_send_quota_reads_the_account_limits(aws, sender):
    quota = sender.send_quota()
    assert quota == SendQuota(max_send_rate=1.0, max_24_hour_send=200.0, sent_last_24_hours=0.0)


def stubbed_refusal(code: str, message: str) -> SesSender:
    client = boto3.client(
        "ses", region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x"
    )
    stubber = Stubber(client)
    stubber.add_client_error("send_email", service_error_code=code, service_message=message)
    stubber.activate()
    return SesSender(client)


@pytest.mark.parametrize(
    ("message", "error_class"),
    [
        ("Maximum sending rate exceeded.", SendThrottled),
        ("Daily message quota exceeded.", DailyQuotaExceeded),
    ],
)
def test_ses_throttling_is_told_apart_by_its_message(message, error_class):
    with pytest.raises(error_class) as info:
        stubbed_refusal("Throttling", message).send(EMAIL)
    assert not info.value.permanent  # the record waits on the queue
    assert info.value.reason == f"Throttling: {message}"
    assert info.value.key == EMAIL.to


def test_other_throttling_stays_a_plain_transient_error():
    with pytest.raises(TransientError) as info:
        stubbed_refusal("Throttling", "Rate exceeded").send(EMAIL)
    assert type(info.value) is TransientError


def test_a_rejection_is_still_permanent():
    with pytest.raises(SendRejected):
        stubbed_refusal("MessageRejected", "Illegal address").send(EMAIL)


# --- an email with headers of its own: SendRawEmail ------------------------------------------

UNSUBSCRIBE = "https://email.example.org/unsubscribe/" + "t0k3n" * 30 + "?c=dataset-activity"
WITH_HEADERS = OutgoingEmail(
    from_address=EMAIL.from_address,
    to=EMAIL.to,
    subject=EMAIL.subject,
    html=EMAIL.html,
    text=EMAIL.text,
    reply_to=EMAIL.reply_to,
    journal_key="key-1",
    headers=(
        ("List-Unsubscribe", f"<{UNSUBSCRIBE}>"),
        ("List-Unsubscribe-Post", "List-Unsubscribe=One-Click"),
    ),
)


def lf(text: str) -> str:
    return text.replace("\r\n", "\n")  # CRLF on the wire


def parsed(raw: str | bytes):
    import email
    from email.policy import default

    data = raw.encode() if isinstance(raw, str) else raw
    return email.message_from_bytes(data, policy=default)


def test_an_email_with_headers_is_sent_raw_with_them_its_parts_and_its_tags(aws, sender):
    raw_requests: list[dict] = []
    hook = lambda params, **_: raw_requests.append(params)  # noqa: E731
    sender.client.meta.events.register("provide-client-params.ses.SendRawEmail", hook)
    seen: list[int] = []
    try:
        message_id = sender.send(WITH_HEADERS, before_send=lambda: seen.append(len(raw_requests)))
    finally:
        sender.client.meta.events.unregister("provide-client-params.ses.SendRawEmail", hook)

    assert seen == [1]  # the rate's slot is taken once the raw request is built, as for SendEmail
    [sent] = aws.sent_emails()
    assert message_id == sent.id
    message = parsed(sent.raw_data)
    assert message["List-Unsubscribe"] == f"<{UNSUBSCRIBE}>"  # one line, never encoded
    assert message["List-Unsubscribe-Post"] == "List-Unsubscribe=One-Click"
    assert message["To"] == EMAIL.to
    assert message["From"] == EMAIL.from_address
    assert message["Reply-To"] == "support@pennsieve.test, help@pennsieve.test"
    assert message["Subject"] == EMAIL.subject
    assert message.get_content_type() == "multipart/alternative"
    text, html = message.iter_parts()
    assert (text.get_content_type(), lf(text.get_content())) == ("text/plain", EMAIL.text)
    assert (html.get_content_type(), lf(html.get_content()).rstrip()) == ("text/html", EMAIL.html)
    assert max(len(line) for line in sent.raw_data.splitlines()) < 998
    [params] = raw_requests
    assert params["Source"] == EMAIL.from_address
    assert params["ConfigurationSetName"] == "emailops"
    assert params["Tags"] == [{"Name": JOURNAL_KEY_TAG, "Value": encode_journal_key("key-1")}]


def test_an_email_with_headers_and_no_text_is_one_html_part(aws, sender):
    from dataclasses import replace

    sender.send(replace(WITH_HEADERS, text=""))
    [sent] = aws.sent_emails()
    message = parsed(sent.raw_data)
    assert message.get_content_type() == "text/html"
    assert lf(message.get_content()).rstrip() == EMAIL.html
    assert message["List-Unsubscribe-Post"] == "List-Unsubscribe=One-Click"
