"""SES v1 ``SendEmail``: the one way emails leave the system."""

from __future__ import annotations

from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from emailops.aws.clients import translate_error
from emailops.core.delivery_events import JOURNAL_KEY_TAG, encode_journal_key
from emailops.core.errors import SendRejected
from emailops.core.ports import OutgoingEmail

__all__ = ["SesSender"]


class SesSender:
    def __init__(self, client: Any, *, configuration_set: str = "") -> None:
        self.client = client
        # Events (delivery, bounce, complaint...) are published through the configuration set.
        self.configuration_set = configuration_set

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
                **self._event_options(email),
            )
        except (ClientError, BotoCoreError) as exc:
            raise translate_error(
                exc, "send email", key=email.to, permanent_class=SendRejected
            ) from exc
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

    def verify_sender(self, address: str) -> None:
        """Ask SES to verify the sender identity (moto verifies at once; real SES mails a link)."""
        try:
            self.client.verify_email_identity(EmailAddress=address)
        except (ClientError, BotoCoreError) as exc:
            raise translate_error(exc, "verify sender identity", key=address) from exc
