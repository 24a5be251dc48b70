"""The publish gate's ``spam-score`` rule: the full message as it would be sent (headers, subject,
plain-text and HTML parts), scored by SpamAssassin through a scorer the caller hands in (the
console's is ``emailops.spamd``); a score at the threshold (5.0, SpamAssassin's own, or the
template's ``<!-- emailops: spam-threshold=N -->``) is a warning naming the rules that fired."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from email.charset import QP, Charset
from email.mime.multipart import MIMEMultipart
from email.mime.text import MIMEText
from email.utils import formatdate, parseaddr
from typing import Protocol

from emailops.core.template_findings import NOTE, WARNING, Finding

__all__ = [
    "SPAM_THRESHOLD",
    "SpamScore",
    "SpamScorer",
    "full_message",
    "spam_findings",
]

SPAM_THRESHOLD = 5.0  # SpamAssassin's required_score
_RECIPIENT = "recipient@example.com"


@dataclass(frozen=True)
class SpamScore:
    score: float
    rules: tuple[tuple[float, str, str], ...]  # (points, rule, description), as spamd reports


class SpamScorer(Protocol):
    def describe(self) -> str: ...

    def score(self, message: bytes) -> SpamScore | str:
        """The score, or why there is none ("spamd not reachable at ...")."""
        ...


def full_message(*, subject: str, html: str, text: str, sender: str) -> bytes:
    """The message as SES sends it from SendEmail's parts: From, To, Subject, Date, Message-ID,
    multipart/alternative of the text and the HTML (UTF-8, quoted-printable)."""
    charset = Charset("utf-8")
    charset.body_encoding = QP
    # The boundary and the Message-ID follow the content: the same render is the same message
    # (but for its Date), so a scorer may keep its score.
    seed = hashlib.sha256("\0".join((subject, html, text, sender)).encode()).hexdigest()
    message = MIMEMultipart("alternative", boundary=f"=_emailops_{seed[:24]}")
    for header, value in (
        ("From", sender),
        ("To", _RECIPIENT),
        ("Subject", subject),
        ("Date", formatdate(usegmt=True)),
    ):
        message.add_header(header, value)
    domain = parseaddr(sender)[1].rpartition("@")[2] or "example.com"
    message["Message-ID"] = f"<{seed[24:56]}@{domain}>"
    for body, subtype in ((text, "plain"), (html, "html")):
        if body:
            message.attach(MIMEText(body, subtype, charset))  # type: ignore[arg-type]
    return message.as_bytes()


def spam_findings(
    result: SpamScore | str,
    *,
    key: str,
    organization: str | None,
    threshold: float = SPAM_THRESHOLD,
) -> list[Finding]:
    if isinstance(result, str):
        return [Finding(NOTE, "spam-score", f"not scored: {result}", key, organization)]
    fired = sorted((r for r in result.rules if r[0] > 0), reverse=True)
    rules = ", ".join(f"{name} {points:+.1f} ({what})" for points, name, what in fired[:8])
    if result.score < threshold:
        return [
            Finding(
                NOTE,
                "spam-score",
                f"SpamAssassin scores {result.score:.1f} (warns at {threshold:g})"
                + (f": {rules}" if rules else ""),
                key,
                organization,
            )
        ]
    return [
        Finding(
            WARNING,
            "spam-score",
            f"SpamAssassin scores {result.score:.1f}, at or over {threshold:g}: filters are "
            f"likely to put it in spam. Rules that fired: {rules}",
            key,
            organization,
            None,
            "the whole message (subject, text and HTML)",
            "rewrite what the top rules name (shouting capitals, money and urgency phrases, "
            "an image-heavy body, a missing text part)",
        )
    ]
