"""SNS signature verification with our own RSA key and self-signed certificate: versions 1 and 2,
tampering, certificate hosts, the topic allow-list and the certificate cache."""

from __future__ import annotations

import base64
import json
from datetime import UTC, datetime, timedelta

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import padding, rsa
from cryptography.x509.oid import NameOID

from emailops.aws.sns_verify import SnsVerifier, canonical_string, is_sns_certificate_url
from emailops.core.delivery_events import BadEvent, parse_envelope
from emailops.core.errors import TransientError

TOPIC = "arn:aws:sns:us-east-1:123456789012:email-ses-events"
CERT_URL = "https://sns.us-east-1.amazonaws.com/SimpleNotificationService-abc.pem"


def _certificate(key: rsa.RSAPrivateKey) -> bytes:
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "sns.amazonaws.com")])
    now = datetime.now(UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - timedelta(days=1))
        .not_valid_after(now + timedelta(days=1))
        .sign(key, hashes.SHA256())
    )
    return cert.public_bytes(serialization.Encoding.PEM)


@pytest.fixture(scope="module")
def signer():
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    return key, _certificate(key)


class Fetcher:
    def __init__(self, pem: bytes) -> None:
        self.pem = pem
        self.calls: list[str] = []

    def __call__(self, url: str) -> bytes:
        self.calls.append(url)
        return self.pem


def sns_time(moment: datetime) -> str:
    """A Timestamp as SNS writes it: 2026-11-30T14:31:27.123Z."""
    return (
        moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"
    )


def signed(
    key,
    *,
    version: str = "1",
    subject: str | None = None,
    message: str | None = None,
    timestamp: str | None = None,
    **overrides,
) -> str:
    """An envelope signed with ``key``; sent now unless ``timestamp`` says when."""
    fields = {
        "Type": "Notification",
        "MessageId": "22b80b92-fdea-4c2c-8f9d-bdfb0c7bf324",
        "TopicArn": TOPIC,
        "Message": message or json.dumps({"eventType": "Delivery", "mail": {"messageId": "m-1"}}),
        "Timestamp": sns_time(datetime.now(UTC)) if timestamp is None else timestamp,
        "SignatureVersion": version,
        "SigningCertURL": CERT_URL,
        "UnsubscribeURL": "https://sns.us-east-1.amazonaws.com/?Action=Unsubscribe",
    }
    if subject is not None:
        fields["Subject"] = subject
    digest = hashes.SHA1() if version == "1" else hashes.SHA256()
    _, envelope = parse_envelope(json.dumps(fields))
    signature = key.sign(canonical_string(envelope), padding.PKCS1v15(), digest)
    fields["Signature"] = base64.b64encode(signature).decode()
    fields.update(overrides)
    return json.dumps(fields)


def check(verifier: SnsVerifier, body: str) -> None:
    verifier(parse_envelope(body)[1])


@pytest.mark.parametrize("version", ["1", "2"])
def test_good_signatures_verify(signer, version):
    key, pem = signer
    verifier = SnsVerifier(verify_signatures=True, fetch=Fetcher(pem))
    check(verifier, signed(key, version=version))
    check(verifier, signed(key, version=version, subject="Amazon SES Email Event Notification"))


# --- freshness: a signature never expires, the window does ------------------------------------

SENT = datetime(2026, 11, 30, 14, 31, 27, 123000, tzinfo=UTC)


def at(moment: datetime):
    return lambda: moment.timestamp()


def test_a_correctly_signed_message_from_2019_is_refused(signer):
    """The finding: a genuine signed message from years ago, replayed onto the queue, verified."""
    key, pem = signer
    verifier = SnsVerifier(verify_signatures=True, fetch=Fetcher(pem))
    with pytest.raises(BadEvent) as info:
        check(verifier, signed(key, timestamp="2019-05-02T19:50:51.123Z"))
    assert info.value.reason.startswith(
        "SNS message Timestamp 2019-05-02T19:50:51.123Z is older than "
        "SES_EVENTS_MAX_AGE_SECONDS (30 days)"
    )


@pytest.mark.parametrize(
    ("now", "ok"),
    [
        (SENT, True),
        (SENT + timedelta(days=30) - timedelta(seconds=1), True),
        (SENT + timedelta(days=30, seconds=1), False),
        (SENT - timedelta(minutes=4, seconds=59), True),  # our clock a little behind SNS's
        (SENT - timedelta(minutes=5, seconds=1), False),
    ],
)
def test_the_window_is_30_days_back_and_5_minutes_ahead(signer, now, ok):
    key, pem = signer
    verifier = SnsVerifier(verify_signatures=True, fetch=Fetcher(pem), clock=at(now))
    body = signed(key, version="2", timestamp=sns_time(SENT))
    if ok:
        check(verifier, body)
    else:
        with pytest.raises(BadEvent, match=r"SNS message Timestamp 2026-11-30T14:31:27\.123Z is"):
            check(verifier, body)


def test_a_message_from_the_future_says_so(signer):
    key, pem = signer
    verifier = SnsVerifier(verify_signatures=True, fetch=Fetcher(pem), clock=at(SENT))
    with pytest.raises(BadEvent, match=r"more than 5 minutes ahead of this host's clock"):
        check(verifier, signed(key, timestamp=sns_time(SENT + timedelta(hours=1))))


def test_the_window_follows_the_setting_and_0_accepts_any_age(signer):
    key, pem = signer
    old = signed(key, timestamp="2019-05-02T19:50:51.123Z")
    hour = SnsVerifier(verify_signatures=True, fetch=Fetcher(pem), max_age_seconds=3600)
    with pytest.raises(BadEvent, match=r"SES_EVENTS_MAX_AGE_SECONDS \(1 hour\)"):
        check(hour, signed(key, timestamp=sns_time(datetime.now(UTC) - timedelta(hours=2))))
    check(SnsVerifier(verify_signatures=True, fetch=Fetcher(pem), max_age_seconds=0), old)


@pytest.mark.parametrize("timestamp", ["yesterday", "2019-05-02T19:50:51", ""])
def test_a_signed_timestamp_that_is_no_utc_time_is_refused(signer, timestamp):
    key, pem = signer
    with pytest.raises(BadEvent, match="not an ISO 8601 time in UTC"):
        check(
            SnsVerifier(verify_signatures=True, fetch=Fetcher(pem)),
            signed(key, timestamp=timestamp),
        )


def test_off_means_no_freshness_check_either(signer):
    key, _ = signer
    check(SnsVerifier(verify_signatures=False), signed(key, timestamp="2019-05-02T19:50:51.123Z"))


def test_the_canonical_string_follows_aws_field_order():
    _, envelope = parse_envelope(
        json.dumps(
            {"Type": "Notification", "MessageId": "i", "TopicArn": "t", "Message": "m"}
            | {"Timestamp": "ts", "Subject": "s"}
        )
    )
    assert canonical_string(envelope) == (
        b"Message\nm\nMessageId\ni\nSubject\ns\nTimestamp\nts\nTopicArn\nt\nType\nNotification\n"
    )


@pytest.mark.parametrize(
    "tamper",
    [
        {"Message": json.dumps({"eventType": "Bounce"})},
        {"TopicArn": TOPIC + "-other"},
        {"Timestamp": "2026-11-30T14:31:28.000Z"},
        {"Subject": "added later"},
        {"SignatureVersion": "2"},  # signed with SHA1, claims SHA256
        {"Signature": base64.b64encode(b"\0" * 256).decode()},
        {"Signature": "not base64!"},
        {"SignatureVersion": "3"},
    ],
)
def test_tampered_messages_fail(signer, tamper):
    key, pem = signer
    verifier = SnsVerifier(verify_signatures=True, fetch=Fetcher(pem))
    with pytest.raises(BadEvent):
        check(verifier, signed(key, **tamper))


def test_a_signature_by_another_key_fails(signer):
    _, pem = signer
    other = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    with pytest.raises(BadEvent, match="does not match"):
        check(SnsVerifier(verify_signatures=True, fetch=Fetcher(pem)), signed(other))


@pytest.mark.parametrize(
    ("url", "ok"),
    [
        (CERT_URL, True),
        ("https://sns.eu-west-1.amazonaws.com/SimpleNotificationService-x.pem", True),
        ("https://sns.cn-north-1.amazonaws.com.cn/SimpleNotificationService-x.pem", True),
        ("http://sns.us-east-1.amazonaws.com/SimpleNotificationService-x.pem", False),
        ("https://sns.us-east-1.amazonaws.com.evil.test/x.pem", False),
        ("https://evil.test/sns.us-east-1.amazonaws.com/x.pem", False),
        ("https://s3.amazonaws.com/x.pem", False),
        ("https://sns.us-east-1.amazonaws.com:8443/x.pem", False),
        ("https://user@sns.us-east-1.amazonaws.com/x.pem", False),
        ("https://sns.us-east-1.amazonaws.com/x.txt", False),
        # An S3 bucket named "sns" answers at sns.s3.amazonaws.com: anyone can put a .pem there.
        ("https://sns.s3.amazonaws.com/x.pem", False),
        ("https://sns.s3-website.amazonaws.com/x.pem", False),
        ("https://sns.us-east-1.amazonaws.com.cn/x.pem", False),
        ("https://sns.cn-north-1.amazonaws.com/x.pem", False),
        ("https://sns.us-east-1.amazonaws.com:x/x.pem", False),
    ],
)
def test_certificate_urls_must_be_aws_sns_hosts(url, ok):
    assert is_sns_certificate_url(url) is ok


def test_a_foreign_certificate_host_is_refused_without_fetching(signer):
    key, pem = signer
    fetcher = Fetcher(pem)
    body = json.loads(signed(key))
    body["SigningCertURL"] = "https://attacker.example/SimpleNotificationService-abc.pem"
    with pytest.raises(BadEvent, match="not the AWS SNS host"):
        check(SnsVerifier(verify_signatures=True, fetch=fetcher), json.dumps(body))
    assert fetcher.calls == []


@pytest.mark.parametrize(
    "url",
    [
        "https://sns.s3.amazonaws.com/SimpleNotificationService-abc.pem",
        "https://sns.eu-west-1.amazonaws.com/SimpleNotificationService-abc.pem",
    ],
)
def test_the_certificate_host_is_the_topics_own_regions_sns(signer, url):
    """The sns-bucket host, and a real SNS host of another region than the TopicArn's: refused
    before anything is fetched (the signature itself would verify with the attacker's cert)."""
    key, pem = signer
    fetcher = Fetcher(pem)
    with pytest.raises(BadEvent, match="us-east-1, the topic's region"):
        check(SnsVerifier(verify_signatures=True, fetch=fetcher), signed(key, SigningCertURL=url))
    assert fetcher.calls == []


def test_a_china_topic_takes_its_certificate_from_amazonaws_com_cn(signer):
    key, pem = signer
    topic = "arn:aws-cn:sns:cn-north-1:123456789012:email-ses-events"
    body = json.loads(signed(key))
    body.update(
        TopicArn=topic,
        SigningCertURL="https://sns.cn-north-1.amazonaws.com.cn/SimpleNotificationService-a.pem",
    )
    _, envelope = parse_envelope(json.dumps(body))
    body["Signature"] = base64.b64encode(
        key.sign(canonical_string(envelope), padding.PKCS1v15(), hashes.SHA1())
    ).decode()
    check(SnsVerifier(verify_signatures=True, fetch=Fetcher(pem)), json.dumps(body))


def test_the_certificate_is_fetched_once(signer):
    key, pem = signer
    fetcher = Fetcher(pem)
    verifier = SnsVerifier(verify_signatures=True, fetch=fetcher)
    for version in ("1", "2", "1"):
        check(verifier, signed(key, version=version))
    assert fetcher.calls == [CERT_URL]


def test_an_unreachable_certificate_is_transient_and_garbage_is_bad(signer):
    key, _ = signer

    def down(url: str) -> bytes:
        raise OSError("connection refused")

    with pytest.raises(TransientError):
        check(SnsVerifier(verify_signatures=True, fetch=down), signed(key))
    with pytest.raises(BadEvent, match="not a PEM"):
        check(SnsVerifier(verify_signatures=True, fetch=lambda url: b"nope"), signed(key))


def test_the_topic_allow_list_applies_with_or_without_signatures(signer):
    key, pem = signer
    body = signed(key)
    for verify in (True, False):
        mine = SnsVerifier(verify_signatures=verify, allowed_topics=[TOPIC], fetch=Fetcher(pem))
        check(mine, body)
        foreign = SnsVerifier(
            verify_signatures=verify, allowed_topics=[TOPIC + "-x"], fetch=Fetcher(pem)
        )
        with pytest.raises(BadEvent, match="SES_EVENTS_TOPIC_ARNS"):
            check(foreign, body)


def test_off_means_unsigned_envelopes_and_bare_events_pass():
    unsigned = json.dumps({"Type": "Notification", "TopicArn": TOPIC, "Message": "{}"})
    check(SnsVerifier(verify_signatures=False), unsigned)
    with pytest.raises(BadEvent):
        check(SnsVerifier(verify_signatures=True, fetch=Fetcher(b"")), unsigned)
    check(SnsVerifier(verify_signatures=False, allowed_topics=[TOPIC]), json.dumps({"x": 1}))


def test_on_a_bare_event_is_refused_unless_the_queue_has_raw_delivery():
    """A bare Bounce skipped both the signature and the topic allow-list: anyone who may send to
    the queue could suppress any address."""
    bare = json.dumps({"eventType": "Bounce", "bounce": {"bounceType": "Permanent"}})
    fetcher = Fetcher(b"")
    with pytest.raises(BadEvent, match=r"no SNS envelope.*SES_EVENTS_RAW_DELIVERY"):
        check(SnsVerifier(verify_signatures=True, allowed_topics=[TOPIC], fetch=fetcher), bare)
    raw = SnsVerifier(verify_signatures=True, allowed_topics=[TOPIC], raw_delivery=True)
    check(raw, bare)  # the topic cannot be checked: the queue policy is what is trusted
    assert fetcher.calls == []


def test_envelopes_signed_by_another_implementation_verify(aws_events):
    """moto's SNS signs what it delivers to SQS (version 2) with its own certificate: our
    canonical string must be the one it signed."""
    from moto.core import DEFAULT_ACCOUNT_ID
    from moto.sns.models import sns_backends

    keys = sns_backends[DEFAULT_ACCOUNT_ID]["us-east-1"]._message_public_keys
    calls: list[str] = []

    def from_moto(url: str) -> bytes:  # where moto keeps the certificate it signed with
        calls.append(url)
        return keys[url.rsplit("/", 1)[-1]]

    # Without a Subject: moto leaves it out of what it signs, where AWS includes it.
    aws_events.sns.publish(TopicArn=aws_events.topic_arn, Message='{"eventType": "Send"}')
    [message] = aws_events.queue_messages(aws_events.events_queue_url)
    body = json.loads(message["Body"])
    assert body["SignatureVersion"] == "2"
    verifier = SnsVerifier(
        verify_signatures=True, allowed_topics=[aws_events.topic_arn], fetch=from_moto
    )
    check(verifier, message["Body"])
    assert calls == [body["SigningCertURL"]]
    body["Message"] = '{"eventType": "Bounce"}'
    with pytest.raises(BadEvent):
        check(verifier, json.dumps(body))
