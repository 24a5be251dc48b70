"""The EmailRequest wire contract, as producers put it on the queue.

Parsing is strict about anything that could reach an S3 key or an address header and lenient about
what the Go consumer tolerated (a missing or null ``context`` is an empty one).
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from typing import Any

from email_validator import EmailNotValidError, validate_email

from emailops.core.errors import InvalidRequest

__all__ = ["EmailRequest", "Recipient", "parse_request", "request_to_json"]


@dataclass(frozen=True)
class Recipient:
    email: str
    name: str = ""


@dataclass(frozen=True)
class RejectedRecipient:
    address: str
    reason: str


@dataclass(frozen=True)
class EmailRequest:
    message_id: str
    recipients: tuple[Recipient, ...]
    context: dict[str, Any] = field(default_factory=dict)
    dedupe_id: str = ""
    rejected: tuple[RejectedRecipient, ...] = ()
    warnings: tuple[str, ...] = ()

    @property
    def organization_id(self) -> str | None:
        """The branding organization as it appears in S3 keys (``custom/O{id}/``), or None."""
        return organization_id_of(self.context)


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def _parse_int(text: str) -> int | float:
    # Go decodes every number as float64, where "-0" keeps its sign; Python's int would drop it.
    if text.lstrip("-").strip("0") == "" and text.startswith("-"):
        return -0.0
    value = int(text)
    _parse_float(text)  # beyond float64, Go's decoder refuses it: so do we
    return value


def _parse_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"number {text[:20]} is out of range for a float64")
    return value


_SURROGATE = re.compile("[\ud800-\udfff]")
# Deeper than this, the recursive dedupe encoder would overflow Python's stack; DynamoDB stores only
# 32 levels anyway, so no such request could be journaled.
MAX_DEPTH = 100


def go_text(value: str) -> str:
    """A string as Go holds it after decoding: each unpaired surrogate becomes U+FFFD."""
    return _SURROGATE.sub("\ufffd", value)


def _go_strings(value: Any, depth: int = 0) -> Any:
    """Go decodes an unpaired surrogate escape (``"\\ud800"``) as U+FFFD; Python keeps the
    surrogate, which neither DynamoDB nor SES clients can encode."""
    if depth > MAX_DEPTH:
        raise ValueError(f"nested more than {MAX_DEPTH} levels deep")
    if isinstance(value, str):
        return go_text(value)
    if isinstance(value, list):
        return [_go_strings(v, depth + 1) for v in value]
    if isinstance(value, dict):
        return {_go_strings(k): _go_strings(v, depth + 1) for k, v in value.items()}
    return value


def loads(body: str | bytes) -> Any:
    """json.loads that decodes as Go does: refuses NaN/Infinity and numbers beyond float64 (not
    JSON, or not decodable by Go), and turns unpaired surrogates into U+FFFD. Also refuses bodies
    nested deeper than MAX_DEPTH."""
    data = json.loads(
        body, parse_constant=_reject_constant, parse_int=_parse_int, parse_float=_parse_float
    )
    return _go_strings(data)


def organization_id_of(context: dict[str, Any]) -> str | None:
    value = context.get("organizationId")
    if value is None:
        return None
    if isinstance(value, bool):
        raise InvalidRequest("parse request", reason="context.organizationId must be a number")
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        return str(int(value))
    if isinstance(value, str) and value.isascii() and value.isdigit():
        return value
    raise InvalidRequest(
        "parse request",
        reason=f"context.organizationId must be an integer or a string of digits, got {value!r}",
    )


def _parse_recipient(index: int, raw: Any) -> Recipient:
    where = f"recipients[{index}]"
    if not isinstance(raw, dict):
        raise InvalidRequest("parse request", reason=f"{where} must be an object with an email")
    email = raw.get("email")
    if not isinstance(email, str) or not email:
        raise InvalidRequest("parse request", reason=f"{where}.email is missing")
    if not email.isascii():  # SES (and formataddr) take only ASCII addresses
        raise InvalidRequest(
            "parse request", reason=f"{where}.email {email!r} must be an ASCII address"
        )
    try:
        validate_email(email, check_deliverability=False)
    except EmailNotValidError as exc:
        raise InvalidRequest("parse request", reason=f"{where}.email {email!r}: {exc}") from None
    name = raw.get("name") or ""
    if not isinstance(name, str):
        raise InvalidRequest("parse request", reason=f"{where}.name must be a string")
    if any(ch in name for ch in "\r\n"):
        raise InvalidRequest("parse request", reason=f"{where}.name must be one line")
    return Recipient(email=email, name=name)


def parse_request(body: str | bytes) -> EmailRequest:
    """Parse and validate one SQS body; raises InvalidRequest with a readable reason."""
    try:
        data = loads(body)
    except (ValueError, RecursionError) as exc:  # (UnicodeDecodeError is a ValueError)
        raise InvalidRequest("parse request", reason=f"body is not JSON ({exc})") from None
    if not isinstance(data, dict):
        raise InvalidRequest("parse request", reason="body must be a JSON object")

    message_id = data.get("messageId")
    if not isinstance(message_id, str) or not message_id.strip():
        raise InvalidRequest("parse request", reason="messageId is missing or empty")

    raw_recipients = data.get("recipients")
    if not isinstance(raw_recipients, list) or not raw_recipients:
        raise InvalidRequest("parse request", key=message_id, reason="no recipients")
    recipients: dict[str, Recipient] = {}
    for index, raw in enumerate(raw_recipients):
        recipient = _parse_recipient(index, raw)
        recipients.setdefault(recipient.email, recipient)  # a repeat would share the same key

    context = data.get("context")
    if context is None:
        context = {}
    if not isinstance(context, dict):
        raise InvalidRequest("parse request", key=message_id, reason="context must be an object")

    dedupe_id = data.get("dedupeId")
    if dedupe_id is None:
        dedupe_id = ""
    if not isinstance(dedupe_id, str):
        raise InvalidRequest("parse request", key=message_id, reason="dedupeId must be a string")

    request = EmailRequest(
        message_id=message_id,
        recipients=tuple(recipients.values()),
        context=context,
        dedupe_id=dedupe_id,
    )
    try:
        request.organization_id  # noqa: B018 -- validated here so a bad one never reaches an S3 key
    except InvalidRequest as exc:
        exc.key = message_id
        exc.request = request  # recipients are known: the pipeline journals them as FAILED
        raise
    return request


def request_to_json(request: EmailRequest) -> str:
    """Serialise a request back to the wire format (for enqueue, resend and send-test)."""
    payload: dict[str, Any] = {
        "messageId": request.message_id,
        "recipients": [
            {"name": r.name, "email": r.email} if r.name else {"email": r.email}
            for r in request.recipients
        ],
        "context": request.context,
    }
    if request.dedupe_id:
        payload["dedupeId"] = request.dedupe_id
    return json.dumps(payload, ensure_ascii=False)
