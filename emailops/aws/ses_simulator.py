"""The local stack's stand-in for SES's mailbox simulator (``SES_SIMULATE_EVENTS``).

moto accepts sends but publishes no events. This sender wraps the real one and, after each
successful send, publishes to the events topic what SES would: a Send event, then per the
simulator address a Bounce, a Complaint or a Delivery, shaped like SES's own records (tags
included). They travel the production path: topic → events queue → ``consume_ses_events``.

- ``bounce@simulator.amazonses.com`` → Bounce, Permanent/General, ``smtp; 550 5.1.1 user unknown``
- ``complaint@simulator.amazonses.com`` → Delivery, then Complaint (abuse)
- ``suppressionlist@simulator.amazonses.com`` → Bounce, Permanent/OnAccountSuppressionList
- anything else → Delivery

Like SES, a label after ``+`` is ignored (``bounce+test1@simulator.amazonses.com``).
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable
from datetime import UTC, datetime
from email.utils import parseaddr
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from emailops.aws.clients import translate_error
from emailops.core.delivery_events import JOURNAL_KEY_TAG, encode_journal_key
from emailops.core.events import EventLog
from emailops.core.ports import OutgoingEmail

__all__ = ["SIMULATOR_DOMAIN", "SimulatingSender", "simulated_events"]

SIMULATOR_DOMAIN = "simulator.amazonses.com"
_ACCOUNT = "123456789012"
logger = logging.getLogger("emailops.aws.ses_simulator")


def _iso(ms: int) -> str:
    moment = datetime.fromtimestamp(ms / 1000, UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{ms % 1000:03d}Z"


def simulated_events(
    email: OutgoingEmail, ses_message_id: str, *, now_ms: int, configuration_set: str = ""
) -> list[dict[str, Any]]:
    """The events SES would publish for this send, oldest first."""
    address = parseaddr(email.to)[1] or email.to
    local, _, domain = address.lower().partition("@")
    scenario = local.split("+", 1)[0] if domain == SIMULATOR_DOMAIN else ""
    tags: dict[str, list[str]] = {
        "ses:from-domain": [parseaddr(email.from_address)[1].split("@")[-1]]
    }
    if configuration_set:
        tags["ses:configuration-set"] = [configuration_set]
    if email.journal_key and (value := encode_journal_key(email.journal_key)):
        tags[JOURNAL_KEY_TAG] = [value]
    mail = {
        "timestamp": _iso(now_ms),
        "source": email.from_address,
        "sendingAccountId": _ACCOUNT,
        "messageId": ses_message_id,
        "destination": [email.to],
        "headersTruncated": False,
        "commonHeaders": {"from": [email.from_address], "to": [email.to], "subject": email.subject},
        "tags": tags,
    }
    later = _iso(now_ms + 1000)
    events: list[dict[str, Any]] = [{"eventType": "Send", "mail": mail, "send": {}}]
    if scenario in ("bounce", "suppressionlist"):
        on_list = scenario == "suppressionlist"
        events.append(
            {
                "eventType": "Bounce",
                "mail": mail,
                "bounce": {
                    "bounceType": "Permanent",
                    "bounceSubType": "OnAccountSuppressionList" if on_list else "General",
                    "bouncedRecipients": [
                        {
                            "emailAddress": address,
                            "action": "failed",
                            "status": "5.1.1",
                            "diagnosticCode": (
                                "Amazon SES did not send the message to this address because it is "
                                "on the suppression list for your account."
                                if on_list
                                else "smtp; 550 5.1.1 user unknown"
                            ),
                        }
                    ],
                    "timestamp": later,
                    "feedbackId": f"{ses_message_id}-bounce",
                    "reportingMTA": "dns; simulator.amazonses.com",
                },
            }
        )
        return events
    events.append(
        {
            "eventType": "Delivery",
            "mail": mail,
            "delivery": {
                "timestamp": later,
                "processingTimeMillis": 1000,
                "recipients": [address],
                "smtpResponse": "250 2.6.0 Message received",
                "reportingMTA": "a8-70.smtp-out.amazonses.com",
            },
        }
    )
    if scenario == "complaint":
        events.append(
            {
                "eventType": "Complaint",
                "mail": mail,
                "complaint": {
                    "complainedRecipients": [{"emailAddress": address}],
                    "timestamp": _iso(now_ms + 2000),
                    "feedbackId": f"{ses_message_id}-complaint",
                    "complaintFeedbackType": "abuse",
                    "userAgent": "Amazon SES Mailbox Simulator",
                    "arrivalDate": later,
                },
            }
        )
    return events


class SimulatingSender:
    """Wraps a sender; everything but ``send`` passes through to it. The events go to
    ``topic_arn``, or to the topic named ``topic_name``, created (idempotent) on the first send:
    building the sender makes no call."""

    def __init__(
        self,
        inner: Any,
        sns_client: Any,
        topic_arn: str = "",
        *,
        topic_name: str = "",
        configuration_set: str = "",
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.inner = inner
        self.sns = sns_client
        self._topic_arn = topic_arn
        self.topic_name = topic_name
        self.configuration_set = configuration_set
        self.clock = clock

    @property
    def topic_arn(self) -> str:
        if not self._topic_arn:  # a race creates the same topic twice: CreateTopic is idempotent
            self._topic_arn = self.sns.create_topic(Name=self.topic_name)["TopicArn"]
        return self._topic_arn

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def send(self, email: OutgoingEmail, *, before_send: Callable[[], None] | None = None) -> str:
        message_id = self.inner.send(email, before_send=before_send)
        now_ms = int(self.clock() * 1000)
        for event in simulated_events(
            email, message_id, now_ms=now_ms, configuration_set=self.configuration_set
        ):
            try:
                self.sns.publish(TopicArn=self.topic_arn, Message=json.dumps(event))
            except (ClientError, BotoCoreError) as exc:
                # The email is out; a lost simulated event must not make the pipeline resend it.
                EventLog(logger).warning(
                    "simulator.publish_failed",
                    sesMessageId=message_id,
                    error=translate_error(exc, "publish simulated SES event").describe(),
                )
        return message_id
