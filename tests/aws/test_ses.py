"""SesSender against moto: what SES receives, and refusals as permanent SendRejected errors."""

from __future__ import annotations

import pytest

from emailops import wiring
from emailops.aws.ses import SesSender
from emailops.core.errors import ConfigurationFault, SendRejected
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
    return wiring.sender()


@pytest.fixture
def requests(aws):
    """The parameters of each SendEmail call, as botocore builds them (moto keeps only some)."""
    seen: list[dict] = []

    def record(params, **_):
        seen.append(params)

    aws.ses.meta.events.register("provide-client-params.ses.SendEmail", record)
    yield seen
    aws.ses.meta.events.unregister("provide-client-params.ses.SendEmail", record)


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
