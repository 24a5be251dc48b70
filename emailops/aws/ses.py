"""SES v1 ``SendEmail``: the one way emails leave the system."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from emailops.aws.clients import error_code, translate_error
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


class SesSender:
    def __init__(self, client: Any) -> None:
        self.client = client

    def send(self, email: OutgoingEmail) -> str:
        body = {"Html": {"Data": email.html, "Charset": "UTF-8"}}
        if email.text:
            body["Text"] = {"Data": email.text, "Charset": "UTF-8"}
        try:
            response = self.client.send_email(
                Source=email.from_address,
                Destination={"ToAddresses": [email.to]},
                Message={"Subject": {"Data": email.subject, "Charset": "UTF-8"}, "Body": body},
                ReplyToAddresses=list(email.reply_to),
            )
        except (ClientError, BotoCoreError) as exc:
            raise _send_error(exc, email.to) from exc
        return response["MessageId"]

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
