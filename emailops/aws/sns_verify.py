"""Trust only our own SNS topics: the topic allow-list and SNS message signatures (versions 1 and 2).

SNS signs a canonical string built from the envelope's fields (for a Notification: Message,
MessageId, Subject if present, Timestamp, TopicArn, Type — each name and value on its own line) with
the key of the certificate at ``SigningCertURL``; version 1 uses SHA1, version 2 SHA256. The
certificate URL must be https on exactly ``sns.<region>.amazonaws.com`` (``.amazonaws.com.cn`` in
China) for the TopicArn's own region, or anyone could sign with their own (an S3 bucket named
``sns`` is also an amazonaws.com host). Each certificate is fetched once and cached.

A signed message is also refused when its ``Timestamp`` (covered by the signature) is older than
``max_age_seconds`` or more than FUTURE_SKEW_SECONDS ahead of our clock: a signature never expires,
so without this a genuine message captured once (a years-old Bounce) could be replayed onto the
queue for ever.

With verification on, a message without an envelope is refused: anyone allowed to send to the
queue could otherwise skip the signature and the topic check by sending a bare event. Only
``raw_delivery`` (the queue is subscribed with raw message delivery) lets bare events through;
then the queue policy (``sqs:SendMessage`` from our topic alone) is all that keeps strangers out.
"""

from __future__ import annotations

import base64
import binascii
import re
import threading
import time
import urllib.request
from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from urllib.parse import urlsplit

from cryptography import x509
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import padding, rsa

from emailops.core.delivery_events import BadEvent, SnsEnvelope
from emailops.core.errors import TransientError

__all__ = [
    "DEFAULT_MAX_AGE_SECONDS",
    "FUTURE_SKEW_SECONDS",
    "SnsVerifier",
    "canonical_string",
    "fetch_certificate",
    "is_sns_certificate_url",
    "topic_region",
]

# A region name (us-east-1, us-gov-west-1, cn-north-1), not any label: "sns.s3.amazonaws.com" is S3.
_SNS_HOST = re.compile(r"^sns\.(?P<region>[a-z]{2}(?:-[a-z]+)+-\d+)\.amazonaws\.com(?P<cn>\.cn)?$")
_TOPIC_ARN = re.compile(r"^arn:aws[a-z-]*:sns:(?P<region>[a-z0-9-]+):\d+:[A-Za-z0-9_.-]+$")
_SIGNED_FIELDS = {
    "Notification": ("Message", "MessageId", "Subject", "Timestamp", "TopicArn", "Type"),
    "SubscriptionConfirmation": (
        "Message",
        "MessageId",
        "SubscribeURL",
        "Timestamp",
        "Token",
        "TopicArn",
        "Type",
    ),
}
_SIGNED_FIELDS["UnsubscribeConfirmation"] = _SIGNED_FIELDS["SubscriptionConfirmation"]
_HASHES = {"1": hashes.SHA1, "2": hashes.SHA256}

CertificateFetcher = Callable[[str], bytes]

# SES_EVENTS_MAX_AGE_SECONDS's default (why 30 days: emailops/settings.py).
DEFAULT_MAX_AGE_SECONDS = 30 * 86400
# How far ahead of our clock a Timestamp may be: SNS's clock and ours differ a little.
FUTURE_SKEW_SECONDS = 5 * 60


def fetch_certificate(url: str, *, timeout: float = 5.0) -> bytes:
    """Production's fetcher: one HTTPS GET (the URL was checked to be an SNS host first)."""
    with urllib.request.urlopen(url, timeout=timeout) as response:
        return response.read(65536)


def topic_region(topic_arn: str) -> str | None:
    """The region of an SNS topic ARN (arn:aws:sns:eu-west-1:123456789012:name), None if not one."""
    match = _TOPIC_ARN.match(topic_arn)
    return match["region"] if match else None


def is_sns_certificate_url(url: str, *, region: str | None = None) -> bool:
    """https on sns.<region>.amazonaws.com (China: .amazonaws.com.cn), a .pem path; with
    ``region``, that region's host only."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:  # e.g. a port that is not a number
        return False
    host = _SNS_HOST.match(parts.hostname or "")
    return (
        parts.scheme == "https"
        and port in (None, 443)
        and not parts.username
        and host is not None
        and bool(host["cn"]) == host["region"].startswith("cn-")
        and (region is None or host["region"] == region)
        and parts.path.endswith(".pem")
    )


def canonical_string(envelope: SnsEnvelope) -> bytes:
    fields = _SIGNED_FIELDS.get(envelope.type)
    if fields is None:
        raise BadEvent("verify SNS signature", reason=f"unknown SNS message type {envelope.type}")
    lines = []
    for name in fields:
        value = envelope.fields.get(name)
        if value is None:
            if name == "Subject":  # the only optional field
                continue
            raise BadEvent("verify SNS signature", reason=f"the envelope has no {name}")
        lines.append(f"{name}\n{value}\n")
    return "".join(lines).encode()


class SnsVerifier:
    """Checks an envelope before it is read: topic allow-list, then (if on) the signature."""

    def __init__(
        self,
        *,
        verify_signatures: bool,
        allowed_topics: Iterable[str] = (),
        raw_delivery: bool = False,
        fetch: CertificateFetcher = fetch_certificate,
        max_age_seconds: int = DEFAULT_MAX_AGE_SECONDS,
        clock: Callable[[], float] = time.time,
    ) -> None:
        """``max_age_seconds``: how old a signed message's Timestamp may be; 0: any age."""
        self.verify_signatures = verify_signatures
        self.max_age_seconds = max_age_seconds
        self.clock = clock
        self.raw_delivery = raw_delivery
        self.allowed_topics = frozenset(t for t in allowed_topics if t)
        self.fetch = fetch
        self._certificates: dict[str, rsa.RSAPublicKey] = {}
        self._lock = threading.Lock()

    def __call__(self, envelope: SnsEnvelope | None) -> None:
        if envelope is None:
            if self.verify_signatures and not self.raw_delivery:
                raise BadEvent(
                    "verify SNS message",
                    reason="the message has no SNS envelope, so no signature and no topic to "
                    "check (set SES_EVENTS_RAW_DELIVERY=true only if the queue is subscribed "
                    "with raw message delivery)",
                )
            return  # raw delivery, or verification off: the queue policy guards it
        if self.allowed_topics and envelope.topic_arn not in self.allowed_topics:
            raise BadEvent(
                "verify SNS message",
                key=envelope.message_id,
                reason=f"topic {envelope.topic_arn} is not in SES_EVENTS_TOPIC_ARNS",
            )
        if self.verify_signatures:
            self.verify_signature(envelope)

    def verify_signature(self, envelope: SnsEnvelope) -> None:
        def bad(reason: str) -> BadEvent:
            return BadEvent("verify SNS signature", key=envelope.message_id, reason=reason)

        algorithm = _HASHES.get(envelope.signature_version)
        if algorithm is None:
            raise bad(f"unsupported SignatureVersion {envelope.signature_version!r}")
        region = topic_region(envelope.topic_arn)
        if region is None:
            raise bad(f"TopicArn {envelope.topic_arn!r} is not an SNS topic ARN")
        if not is_sns_certificate_url(envelope.signing_cert_url, region=region):
            raise bad(
                f"SigningCertURL {envelope.signing_cert_url!r} is not the AWS SNS host of "
                f"{region}, the topic's region"
            )
        try:
            signature = base64.b64decode(envelope.signature, validate=True)
        except (binascii.Error, ValueError):
            raise bad("the Signature is not base64") from None
        key = self._public_key(envelope.signing_cert_url, bad)
        try:
            key.verify(signature, canonical_string(envelope), padding.PKCS1v15(), algorithm())
        except InvalidSignature:
            raise bad("the signature does not match the message") from None
        self._check_fresh(envelope.timestamp, bad)  # after: the signature vouches for it

    def _check_fresh(self, timestamp: str, bad: Callable[[str], BadEvent]) -> None:
        try:
            sent = datetime.fromisoformat(timestamp)
        except ValueError:
            sent = None
        if sent is None or sent.tzinfo is None:
            raise bad(f"SNS message Timestamp {timestamp!r} is not an ISO 8601 time in UTC")
        age = self.clock() - sent.timestamp()
        if self.max_age_seconds and age > self.max_age_seconds:
            raise bad(
                f"SNS message Timestamp {timestamp} is older than SES_EVENTS_MAX_AGE_SECONDS "
                f"({_duration(self.max_age_seconds)}): a replay, or an event that waited too long"
            )
        if -age > FUTURE_SKEW_SECONDS:
            raise bad(
                f"SNS message Timestamp {timestamp} is more than "
                f"{_duration(FUTURE_SKEW_SECONDS)} ahead of this host's clock "
                f"({datetime.fromtimestamp(self.clock(), UTC):%Y-%m-%dT%H:%M:%SZ})"
            )

    def _public_key(self, url: str, bad: Callable[[str], BadEvent]) -> rsa.RSAPublicKey:
        with self._lock:
            cached = self._certificates.get(url)
        if cached is not None:
            return cached
        try:
            pem = self.fetch(url)
        except OSError as exc:  # not the message's fault: it waits on the queue
            raise TransientError("fetch SNS signing certificate", key=url, reason=str(exc)) from exc
        try:
            certificate = x509.load_pem_x509_certificate(pem)
        except ValueError:
            raise bad(f"{url} is not a PEM certificate") from None
        key = certificate.public_key()
        if not isinstance(key, rsa.RSAPublicKey):
            raise bad(f"{url} does not hold an RSA key")
        with self._lock:
            self._certificates[url] = key
        return key


def _duration(seconds: int) -> str:
    """``30 days``, ``5 minutes``, ``90 seconds``: the largest unit that divides it."""
    for unit, size in (("day", 86400), ("hour", 3600), ("minute", 60)):
        if seconds % size == 0:
            count = seconds // size
            return f"{count} {unit}{'' if count == 1 else 's'}"
    return f"{seconds} seconds"
