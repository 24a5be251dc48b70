"""SES v1 ``SendEmail``: the one way emails leave the system."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from emailops.aws.clients import error_code, translate_error
from emailops.core.delivery_events import JOURNAL_KEY_TAG, encode_journal_key
from emailops.core.errors import DailyQuotaExceeded, EmailOpsError, SendRejected, SendThrottled
from emailops.core.ports import OutgoingEmail

__all__ = ["SendQuota", "SesSender"]

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
        client.meta.events.register_first(
            "before-send.ses.SendEmail", _before_send, unique_id="emailops-before-send"
        )

    def send(self, email: OutgoingEmail, *, before_send: Callable[[], None] | None = None) -> str:
        body = {"Html": {"Data": email.html, "Charset": "UTF-8"}}
        if email.text:
            body["Text"] = {"Data": email.text, "Charset": "UTF-8"}
        _departure.hook = before_send
        try:
            response = self.client.send_email(
                Source=email.from_address,
                Destination={"ToAddresses": [email.to]},
                Message={"Subject": {"Data": email.subject, "Charset": "UTF-8"}, "Body": body},
                ReplyToAddresses=list(email.reply_to),
                **self._event_options(email),
            )
        except (ClientError, BotoCoreError) as exc:
            raise _send_error(exc, email.to) from exc
        finally:
            _departure.hook = None
        return response["MessageId"]

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
