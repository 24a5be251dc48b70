"""SES delivery events: parse what the events queue holds into one normalised event, keeping the raw.

SES publishes an event per email and outcome (configuration set → SNS → SQS). The queue body is either
the SNS envelope (``Type: Notification`` with the event as a JSON string in ``Message``) or, with raw
message delivery, the bare event. The event's ``eventType`` (``notificationType`` in SES's older
identity notifications) says what happened; its own object (``bounce``, ``delivery``...) says when
and to whom. Parsing is split in two so that the adapter can verify the envelope's signature before
anything is read into the domain: ``parse_envelope`` → verify → ``parse_event``.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
from dataclasses import dataclass, field, replace
from datetime import datetime
from enum import StrEnum
from typing import Any

from emailops.core.errors import PermanentError
from emailops.core.journal_words import bounce_summary, complaint_detail, suppression_detail

__all__ = [
    "JOURNAL_KEY_TAG",
    "MAX_TAG_LENGTH",
    "RANK",
    "BadEvent",
    "DeliveryEvent",
    "DeliveryStatus",
    "EventType",
    "SnsEnvelope",
    "decode_journal_key",
    "encode_journal_key",
    "parse_envelope",
    "parse_event",
    "timestamp_ms",
]

# The message tag the sender puts on every email: the journal row's key, base64url without padding,
# because SES tag values allow only ASCII letters, digits, '_' and '-' (at most 256 characters).
JOURNAL_KEY_TAG = "emailops-journal-key"
MAX_TAG_LENGTH = 256


def encode_journal_key(key: str) -> str | None:
    """The key as a tag value, or None when it is too long to fit (the email then goes untagged
    and its events are matched by SES message id alone)."""
    value = base64.urlsafe_b64encode(key.encode()).decode().rstrip("=")
    return value if 0 < len(value) <= MAX_TAG_LENGTH else None


def decode_journal_key(value: str) -> str | None:
    try:
        return base64.urlsafe_b64decode(value + "=" * (-len(value) % 4)).decode() or None
    except (binascii.Error, UnicodeDecodeError, ValueError):
        return None


class BadEvent(PermanentError):
    """The queue message is not an event we can trust or read: not JSON, a bad signature, a topic
    not on the allow-list. It goes to the events queue's dead-letter queue with the reason."""


class EventType(StrEnum):
    SEND = "Send"
    DELIVERY = "Delivery"
    BOUNCE = "Bounce"
    COMPLAINT = "Complaint"
    DELIVERY_DELAY = "DeliveryDelay"
    REJECT = "Reject"
    RENDERING_FAILURE = "Rendering Failure"
    OPEN = "Open"
    CLICK = "Click"
    SUBSCRIPTION = "Subscription"
    UNKNOWN = "Unknown"


class DeliveryStatus(StrEnum):
    DELIVERED = "DELIVERED"
    BOUNCED = "BOUNCED"
    COMPLAINED = "COMPLAINED"
    DELAYED = "DELAYED"
    REJECTED = "REJECTED"


_STATUS_OF = {
    EventType.DELIVERY: DeliveryStatus.DELIVERED,
    EventType.BOUNCE: DeliveryStatus.BOUNCED,
    EventType.COMPLAINT: DeliveryStatus.COMPLAINED,
    EventType.DELIVERY_DELAY: DeliveryStatus.DELAYED,
    EventType.REJECT: DeliveryStatus.REJECTED,
}
# Which status wins: a higher rank always; among equal ranks the later SES timestamp. So a late
# DeliveryDelay never overrides Delivery, and a Bounce/Complaint/Reject always wins over Delivery.
RANK = {
    DeliveryStatus.DELAYED: 1,
    DeliveryStatus.DELIVERED: 2,
    DeliveryStatus.BOUNCED: 3,
    DeliveryStatus.COMPLAINED: 3,
    DeliveryStatus.REJECTED: 3,
}


def timestamp_ms(value: str) -> int:
    """SES's ISO-8601 timestamp ("2017-08-05T00:41:02.669Z") in epoch milliseconds; 0 if unreadable."""
    try:
        return int(datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp() * 1000)
    except (ValueError, AttributeError, TypeError):
        return 0


@dataclass(frozen=True)
class SnsEnvelope:
    """An SNS message as SQS holds it. ``fields`` is the whole envelope (for the canonical string
    its signature covers)."""

    type: str
    message_id: str
    topic_arn: str
    message: str
    timestamp: str
    signature_version: str
    signature: str
    signing_cert_url: str
    fields: dict[str, Any] = field(repr=False)


def parse_envelope(body: str) -> tuple[dict[str, Any], SnsEnvelope | None]:
    """The body as JSON, and its SNS envelope if it has one (None: raw message delivery)."""
    try:
        data = json.loads(body)
    except (ValueError, TypeError):
        raise BadEvent("parse SES event", reason="the message body is not JSON") from None
    if not isinstance(data, dict):
        raise BadEvent("parse SES event", reason="the message body is not a JSON object")
    if "TopicArn" not in data or not isinstance(data.get("Type"), str):
        return data, None
    text = {k: v if isinstance(v, str) else "" for k, v in data.items()}
    return data, SnsEnvelope(
        type=text["Type"],
        message_id=text.get("MessageId", ""),
        topic_arn=text["TopicArn"],
        message=text.get("Message", ""),
        timestamp=text.get("Timestamp", ""),
        signature_version=text.get("SignatureVersion", ""),
        signature=text.get("Signature", ""),
        signing_cert_url=text.get("SigningCertURL", ""),
        fields=data,
    )


@dataclass(frozen=True)
class DeliveryEvent:
    """One SES event, normalised. ``raw`` is SES's event exactly as received."""

    type: EventType
    raw_type: str  # as SES named it (an unknown type keeps its name here)
    at: str  # SES's timestamp of the event itself, as SES wrote it
    ses_message_id: str
    recipients: tuple[str, ...]
    journal_key: str | None
    summary: str  # one line in plain words
    raw: dict[str, Any] = field(repr=False)
    sent_at: str = ""  # mail.timestamp: when SES accepted the email
    bounce_type: str = ""
    bounce_subtype: str = ""
    diagnostic_codes: tuple[tuple[str, str], ...] = ()  # (recipient, diagnosticCode)
    complaint_feedback_type: str = ""
    delay_type: str = ""
    reject_reason: str = ""
    failure_message: str = ""
    link: str = ""  # Click
    ip_address: str = ""  # Open, Click
    user_agent: str = ""  # Open, Click, Complaint
    subscription: dict[str, Any] = field(default_factory=dict)
    sns_message_id: str = ""
    topic_arn: str = ""

    @property
    def at_ms(self) -> int:
        return timestamp_ms(self.at)

    @property
    def delivery_status(self) -> DeliveryStatus | None:
        return _STATUS_OF.get(self.type)

    @property
    def diagnostic_code(self) -> str:
        return next((code for _, code in self.diagnostic_codes if code), "")

    @property
    def event_id(self) -> str:
        """The event's identity: the same SES event, redelivered by SQS or published twice, has
        the same id whatever envelope it came in, so applying it twice is a no-op."""
        identity = "|".join(
            [self.raw_type, self.at, self.ses_message_id, ",".join(sorted(self.recipients))]
            + ([self.link] if self.link else [])
        )
        if self.type is EventType.UNKNOWN and not self.ses_message_id:
            identity += "|" + (self.sns_message_id or json.dumps(self.raw, sort_keys=True))
        return hashlib.sha256(identity.encode()).hexdigest()[:32]

    @property
    def proves_sent(self) -> bool:
        """SES accepted this email: every per-email event says so, except a templated send's
        rendering failure (never sent) and what we cannot read."""
        known = self.type not in (EventType.UNKNOWN, EventType.RENDERING_FAILURE)
        return known and bool(self.ses_message_id)

    def suppressions(self) -> list[tuple[str, str, str]]:
        """(address, reason, detail) to suppress: hard bounces and complaints."""
        if self.type is EventType.BOUNCE and self.bounce_type == "Permanent":
            codes = dict(self.diagnostic_codes)
            return [
                (
                    r,
                    "bounce",
                    suppression_detail(self.bounce_type, self.bounce_subtype, codes.get(r, "")),
                )
                for r in self.recipients
            ]
        if self.type is EventType.COMPLAINT:
            detail = complaint_detail(self.complaint_feedback_type)
            return [(r, "complaint", detail) for r in self.recipients]
        return []


def parse_event(data: dict[str, Any], envelope: SnsEnvelope | None) -> DeliveryEvent:
    """The normalised event; anything we do not know becomes an UNKNOWN event, never an error."""
    sns = {}
    if envelope is not None:
        sns = {"sns_message_id": envelope.message_id, "topic_arn": envelope.topic_arn}
        if envelope.type != "Notification":  # e.g. a cross-account SubscriptionConfirmation
            return _unknown(data, f"SNS {envelope.type}", envelope.timestamp, sns)
        try:
            data = json.loads(envelope.message)
        except (ValueError, TypeError):
            raise BadEvent("parse SES event", reason="the SNS Message is not JSON") from None
        if not isinstance(data, dict):
            raise BadEvent("parse SES event", reason="the SNS Message is not a JSON object")
    raw_type = data.get("eventType") or data.get("notificationType") or ""
    try:
        event_type = EventType(raw_type)
    except ValueError:
        event_type = EventType.UNKNOWN
    mail = data.get("mail") if isinstance(data.get("mail"), dict) else {}
    if event_type is EventType.UNKNOWN:
        return _unknown(data, str(raw_type), mail.get("timestamp", ""), sns, mail=mail)
    detail = _DETAIL_KEYS[event_type]
    body = data.get(detail) if isinstance(data.get(detail), dict) else {}
    fields = _FIELDS[event_type](body)
    recipients = fields.pop("recipients", None) or tuple(_strings(mail.get("destination")))
    event = DeliveryEvent(
        type=event_type,
        raw_type=str(raw_type),
        at=str(body.get("timestamp") or mail.get("timestamp") or ""),
        ses_message_id=str(mail.get("messageId", "")),
        recipients=tuple(recipients),
        journal_key=_journal_key(mail),
        summary="",
        raw=data,
        sent_at=str(mail.get("timestamp", "")),
        **fields,
        **sns,
    )
    return _with_summary(event)


def _unknown(data, raw_type: str, at: str, sns: dict, *, mail: dict | None = None) -> DeliveryEvent:
    mail = mail or {}
    return DeliveryEvent(
        type=EventType.UNKNOWN,
        raw_type=raw_type or "(no type)",
        at=str(at or ""),
        ses_message_id=str(mail.get("messageId", "")),
        recipients=tuple(_strings(mail.get("destination"))),
        journal_key=_journal_key(mail),
        summary=f"An event of a kind emailops does not know: {raw_type or '(no type)'}",
        raw=data,
        **sns,
    )


def _strings(value: Any) -> list[str]:
    return [str(v) for v in value] if isinstance(value, list) else []


def _addresses(items: Any) -> tuple[str, ...]:
    if not isinstance(items, list):
        return ()
    return tuple(
        str(i["emailAddress"]) for i in items if isinstance(i, dict) and "emailAddress" in i
    )


def _codes(items: Any) -> tuple[tuple[str, str], ...]:
    if not isinstance(items, list):
        return ()
    return tuple(
        (str(i.get("emailAddress", "")), str(i.get("diagnosticCode", "")))
        for i in items
        if isinstance(i, dict)
    )


def _journal_key(mail: dict[str, Any]) -> str | None:
    tags = mail.get("tags")
    values = tags.get(JOURNAL_KEY_TAG) if isinstance(tags, dict) else None
    if isinstance(values, list) and values and isinstance(values[0], str):
        return decode_journal_key(values[0])
    return None


_DETAIL_KEYS = {
    EventType.SEND: "send",
    EventType.DELIVERY: "delivery",
    EventType.BOUNCE: "bounce",
    EventType.COMPLAINT: "complaint",
    EventType.DELIVERY_DELAY: "deliveryDelay",
    EventType.REJECT: "reject",
    EventType.RENDERING_FAILURE: "failure",
    EventType.OPEN: "open",
    EventType.CLICK: "click",
    EventType.SUBSCRIPTION: "subscription",
}


def _text(body: dict[str, Any], name: str) -> str:
    value = body.get(name)
    return str(value) if value is not None else ""


_FIELDS = {
    EventType.SEND: lambda b: {},
    EventType.DELIVERY: lambda b: {"recipients": tuple(_strings(b.get("recipients")))},
    EventType.BOUNCE: lambda b: {
        "recipients": _addresses(b.get("bouncedRecipients")),
        "bounce_type": _text(b, "bounceType"),
        "bounce_subtype": _text(b, "bounceSubType"),
        "diagnostic_codes": _codes(b.get("bouncedRecipients")),
    },
    EventType.COMPLAINT: lambda b: {
        "recipients": _addresses(b.get("complainedRecipients")),
        "complaint_feedback_type": _text(b, "complaintFeedbackType"),
        "user_agent": _text(b, "userAgent"),
    },
    EventType.DELIVERY_DELAY: lambda b: {
        "recipients": _addresses(b.get("delayedRecipients")),
        "delay_type": _text(b, "delayType"),
        "diagnostic_codes": _codes(b.get("delayedRecipients")),
    },
    EventType.REJECT: lambda b: {"reject_reason": _text(b, "reason")},
    EventType.RENDERING_FAILURE: lambda b: {"failure_message": _text(b, "errorMessage")},
    EventType.OPEN: lambda b: {
        "ip_address": _text(b, "ipAddress"),
        "user_agent": _text(b, "userAgent"),
    },
    EventType.CLICK: lambda b: {
        "link": _text(b, "link"),
        "ip_address": _text(b, "ipAddress"),
        "user_agent": _text(b, "userAgent"),
    },
    EventType.SUBSCRIPTION: lambda b: {"subscription": b},
}


def _with_summary(event: DeliveryEvent) -> DeliveryEvent:
    who = ", ".join(event.recipients) or "the recipient"
    t = event.type
    if t is EventType.SEND:
        text = f"Accepted by SES for delivery to {who}"
    elif t is EventType.DELIVERY:
        smtp = _text(event.raw.get("delivery") or {}, "smtpResponse")
        text = f"Delivered to {who}'s mail server" + (f" ({smtp})" if smtp else "")
    elif t is EventType.BOUNCE:
        text = bounce_summary(who, event.bounce_type, event.bounce_subtype, event.diagnostic_code)
    elif t is EventType.COMPLAINT:
        kind = f" ({event.complaint_feedback_type})" if event.complaint_feedback_type else ""
        text = f"{who} marked the email as spam{kind}"
    elif t is EventType.DELIVERY_DELAY:
        until = _text(event.raw.get("deliveryDelay") or {}, "expirationTime")
        text = f"Delivery to {who} delayed ({event.delay_type or 'no reason given'})" + (
            f"; SES keeps trying until {until}" if until else ""
        )
    elif t is EventType.REJECT:
        text = f"Rejected by SES, not sent: {event.reject_reason or 'no reason given'}"
    elif t is EventType.RENDERING_FAILURE:
        text = f"Not sent, the template failed to render: {event.failure_message}"
    elif t is EventType.OPEN:
        text = f"Opened by {who}"
    elif t is EventType.CLICK:
        text = f"{who} clicked {event.link or 'a link'}"
    else:  # SUBSCRIPTION
        source = _text(event.subscription, "source")
        text = f"{who} changed subscription preferences" + (f" ({source})" if source else "")
    return replace(event, summary=text)
