"""SES v1 ``SendEmail``, and ``SendRawEmail`` for an email with headers of its own: the one way
emails leave the system.

``SendEmail`` cannot set a header, so an email carrying extra headers (List-Unsubscribe and
List-Unsubscribe-Post on mail a recipient may refuse, RFC 8058) is built here as MIME (From, To,
Reply-To, Subject, its headers, multipart/alternative text + HTML) and sent raw, with the same
configuration set and tags. Every other email stays a ``SendEmail``.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from email.message import EmailMessage
from email.policy import SMTP
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from emailops.aws.clients import error_code, translate_error
from emailops.core.delivery_events import JOURNAL_KEY_TAG, encode_journal_key
from emailops.core.errors import DailyQuotaExceeded, EmailOpsError, SendRejected, SendThrottled
from emailops.core.ports import OutgoingEmail

__all__ = ["SendQuota", "SesSender", "raw_message"]

# SES answers both with the code "Throttling"; only the message tells a rate from a quota.
_THROTTLED = {
    "maximum sending rate exceeded": SendThrottled,
    "daily message quota exceeded": DailyQuotaExceeded,
}


@dataclass(frozen=True)
class SendQuota:
    max_send_rate: float  # emails per second, for the whole account
    max_24_hour_send: float
    sent_last_24_hours: float


def _send_error(exc: ClientError | BotoCoreError, key: str) -> EmailOpsError:
    if isinstance(exc, ClientError) and error_code(exc) == "Throttling":
        message = exc.response.get("Error", {}).get("Message", "")
        for words, error_class in _THROTTLED.items():
            if words in message.lower():
                return error_class("send email", key=key, reason=f"Throttling: {message}")
    return translate_error(exc, "send email", key=key, permanent_class=SendRejected)


def raw_message(email: OutgoingEmail) -> bytes:
    """The email as SendRawEmail takes it: MIME with CRLF line ends, non-ASCII headers
    RFC 2047-encoded, each part UTF-8 in quoted-printable (7-bit safe, as SES recommends).
    SES adds Message-ID and Date."""
    message = EmailMessage(policy=_RAW_POLICY)
    message["From"] = email.from_address
    message["To"] = email.to
    if email.reply_to:
        message["Reply-To"] = ", ".join(email.reply_to)
    message["Subject"] = email.subject
    for name, value in email.headers:
        message[name] = value
    if email.text:
        message.set_content(email.text, charset="utf-8", cte="quoted-printable")
        message.add_alternative(email.html, subtype="html", charset="utf-8", cte="quoted-printable")
    else:
        message.set_content(email.html, subtype="html", charset="utf-8", cte="quoted-printable")
    return message.as_bytes()


# RFC 5322's line limit: a header is folded only past it, so a long List-Unsubscribe URL stays one
# unencoded line (at 78 the folder would RFC 2047-encode it, and no client would read it).
_RAW_POLICY = SMTP.clone(max_line_length=998)


# The ``before_send`` of the send in progress on this thread (botocore calls its hooks in the
# calling thread; one client serves every thread).
_departure = threading.local()


def _before_send(**_: Any) -> None:
    """botocore's ``before-send`` hook: the request is built and signed, the socket is next."""
    hook = getattr(_departure, "hook", None)
    if hook is not None:
        _departure.hook = None  # once, even if botocore were to retry
        hook()


class SesSender:
    def __init__(self, client: Any, *, configuration_set: str = "") -> None:
        self.client = client
        # Events (delivery, bounce, complaint...) are published through the configuration set.
        self.configuration_set = configuration_set
        # The rate limiter's wait runs here, after botocore's CPU work (serialising, signing),
        # so a send reaches SES at its slot plus the network time only. A SigV4 signature stays
        # valid for 5 minutes, far longer than a slot is ever reserved ahead.
        # First: ahead of any handler that answers in SES's place (moto's mock, in tests).
        for operation in ("SendEmail", "SendRawEmail"):
            client.meta.events.register_first(
                f"before-send.ses.{operation}",
                _before_send,
                unique_id=f"emailops-before-send-{operation}",
            )

    def send(self, email: OutgoingEmail, *, before_send: Callable[[], None] | None = None) -> str:
        _departure.hook = before_send
        try:
            if email.headers:
                response = self.client.send_raw_email(
                    Source=email.from_address,
                    RawMessage={"Data": raw_message(email)},
                    **self._event_options(email),
                )
            else:
                response = self._send_email(email)
        except (ClientError, BotoCoreError) as exc:
            raise _send_error(exc, email.to) from exc
        finally:
            _departure.hook = None
        return response["MessageId"]

    def _send_email(self, email: OutgoingEmail) -> dict[str, Any]:
        body = {"Html": {"Data": email.html, "Charset": "UTF-8"}}
        if email.text:
            body["Text"] = {"Data": email.text, "Charset": "UTF-8"}
        return self.client.send_email(
            Source=email.from_address,
            Destination={"ToAddresses": [email.to]},
            Message={"Subject": {"Data": email.subject, "Charset": "UTF-8"}, "Body": body},
            ReplyToAddresses=list(email.reply_to),
            **self._event_options(email),
        )

    def _event_options(self, email: OutgoingEmail) -> dict[str, Any]:
        """Configuration set, and the journal key as a tag so events find the row by it."""
        options: dict[str, Any] = {}
        if self.configuration_set:
            options["ConfigurationSetName"] = self.configuration_set
        tag = encode_journal_key(email.journal_key) if email.journal_key else None
        if tag:
            options["Tags"] = [{"Name": JOURNAL_KEY_TAG, "Value": tag}]
        return options

    def send_quota(self) -> SendQuota:
        """The account's sending limits (GetSendQuota); MaxSendRate paces every consumer."""
        try:
            response = self.client.get_send_quota()
        except (ClientError, BotoCoreError) as exc:
            raise translate_error(exc, "read SES send quota") from exc
        return SendQuota(
            max_send_rate=float(response["MaxSendRate"]),
            max_24_hour_send=float(response["Max24HourSend"]),
            sent_last_24_hours=float(response["SentLast24Hours"]),
        )

    def verify_sender(self, address: str) -> None:
        """Ask SES to verify the sender identity (moto verifies at once; real SES mails a link)."""
        try:
            self.client.verify_email_identity(EmailAddress=address)
        except (ClientError, BotoCoreError) as exc:
            raise translate_error(exc, "verify sender identity", key=address) from exc
