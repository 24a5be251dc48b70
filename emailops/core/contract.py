"""The EmailRequest wire contract, as producers put it on the queue.

Parsing is strict about anything that could reach an S3 key or an address header and lenient about
what the Go consumer tolerated (a missing or null ``context`` is an empty one). Bad input spreads no
further than it must, as in the Go service: an invalid recipient is set aside (``rejected``, with the
reason) while the others are sent, and an ``organizationId`` that is not a number falls back to the
default template with a warning. Only a body with no usable messageId, no recipients list, or no
valid recipient at all is an InvalidRequest.
"""

from __future__ import annotations

import ipaddress
import json
import math
import re
from dataclasses import dataclass, field
from typing import Any

from emailops.core.errors import InvalidRequest
from emailops.core.header_text import control_problem

__all__ = [
    "EmailRequest",
    "Recipient",
    "RejectedRecipient",
    "address_key",
    "address_problem",
    "address_spellings",
    "masked_address",
    "parse_complete_request",
    "parse_request",
    "request_to_json",
]


@dataclass(frozen=True)
class Recipient:
    email: str
    name: str = ""


@dataclass(frozen=True)
class RejectedRecipient:
    """One entry of ``recipients`` that cannot be sent to.

    ``address`` is the entry's email string when it had one, else its place (``recipients[2]``):
    either way ``dedupe_key(request, address)`` keys its FAILED journal row.
    """

    address: str
    reason: str  # plain words, naming the entry (``recipients[2].email ...``)
    field: str = ""  # the wire field at fault: ``recipients[2].email``


@dataclass(frozen=True)
class EmailRequest:
    message_id: str
    recipients: tuple[Recipient, ...]  # the valid ones, each address once, in order
    context: dict[str, Any] = field(default_factory=dict)
    dedupe_id: str = ""
    rejected: tuple[RejectedRecipient, ...] = ()
    warnings: tuple[str, ...] = ()  # problems that did not stop the request (log them)
    # Never from the wire: the producer's own key space (the send API gives each token one).
    # Empty on the queue path, whose keys stay the Go consumer's.
    namespace: str = ""

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
    """The organization as it appears in S3 keys (``custom/O{id}/``); None (the default template)
    when there is none or it is not a number -- as the Go consumer did."""
    value = context.get("organizationId")
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        return str(int(value))
    if isinstance(value, str) and value.isascii() and value.isdigit():
        return value
    return None


def organization_warning(context: dict[str, Any]) -> str | None:
    value = context.get("organizationId")
    if value is None or organization_id_of(context) is not None:
        return None
    shown = repr(value) if len(repr(value)) <= 60 else repr(value)[:57] + "..."
    return f"context.organizationId {shown} is not a number; using the default template"


# --- addresses: what SES accepts, syntax only --------------------------------------------------

MAX_LOCAL_PART = 64  # RFC 5321 4.5.3.1
MAX_DOMAIN = 255
MAX_ADDRESS = 320
_ATOM = r"[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+"
_DOT_ATOM = re.compile(rf"{_ATOM}(?:\.{_ATOM})*")
# A quoted string: printable ASCII and spaces, with " and \ escaped by a backslash.
_QUOTED = re.compile(r'"(?:[ !#-\[\]-~]|\\[ -~])*"')
_LABEL = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?")


def address_problem(address: str) -> str | None:
    """Why SES would refuse ``address`` as a recipient, in plain words; None when it is fine.

    Syntax only (no DNS), and as wide as SES: a quoted local part (``"john doe"@example.com``), a
    single-label domain (``localhost``), special-use names (``.test``, ``.local``, ``.invalid``)
    and IP literals (``[192.0.2.1]``) all pass. Anything that could smuggle a display name or a
    second address into a header (line breaks, ``<>``, commas) does not.
    """
    if not address:
        return "the address is empty"
    if not address.isascii():
        return "SES takes only ASCII addresses"
    if any(ord(ch) < 32 or ord(ch) == 127 for ch in address):
        return "it must be one line of printable characters"
    if any(ch in address for ch in "<>,"):
        return "it must be a bare address, without a name, angle brackets or commas"
    if len(address) > MAX_ADDRESS:
        return f"it is longer than {MAX_ADDRESS} characters"
    local, at, domain = address.rpartition("@")
    if not at:
        return "there is no @"
    if not local:
        return "there is nothing before the @"
    if len(local) > MAX_LOCAL_PART:
        return f"the part before the @ is longer than {MAX_LOCAL_PART} characters"
    if not (_DOT_ATOM.fullmatch(local) or _QUOTED.fullmatch(local)):
        return (
            "the part before the @ must be letters, digits and !#$%&'*+/=?^_`{|}~- in parts"
            " separated by single dots, or a quoted string"
        )
    return _domain_problem(domain)


def address_key(address: str) -> str:
    """The one spelling of a mailbox, for every lookup by address (suppression, erasure,
    preferences; the queue path and the API alike): a display-name form (``"Erin" <erin@x>``, as
    SES reports named recipients) reduced to its address, trimmed, lowercased, and a quoted local
    part that needs no quotes unquoted (RFC 5321 4.1.2: ``"victim"@example.com`` and
    ``"vic\\tim"@example.com`` are ``victim@example.com``). A quoted part that does need them
    (``"john doe"``) is another mailbox and stays quoted."""
    key = address.strip()
    if key.endswith(">") and "<" in key:
        key = key[key.rindex("<") + 1 : -1].strip()
    key = key.lower()
    local, at, domain = key.rpartition("@")
    if at and _QUOTED.fullmatch(local):
        bare = re.sub(r"\\(.)", r"\1", local[1:-1])
        if _DOT_ATOM.fullmatch(bare):
            return f"{bare}@{domain}"
    return key


def masked_address(address: str) -> str:
    """``d***@example.com``: enough for the person who asked to recognise it, no more (how the
    console shows an address it does not need in full)."""
    local, at, domain = address_key(address).rpartition("@")
    return f"{local[:1]}***{at}{domain}" if at else "***"


def address_spellings(address: str) -> list[str]:
    """The spellings of ``address``'s mailbox (its ``address_key``) that can be told from the
    address alone, for a lookup by stored spelling (an index that matches exactly): its key
    first, then as given, lowercased, and the key's local part quoted (``"dana"@example.com``,
    which the key unquotes). Others (a display name, other capitals) cannot be guessed."""
    key = address_key(address)
    local, at, domain = key.rpartition("@")
    quoted = [f'"{local}"@{domain}'] if at and not local.startswith('"') else []
    return list(dict.fromkeys([key, address.strip(), address.strip().lower(), *quoted]))


def _domain_problem(domain: str) -> str | None:
    if not domain:
        return "there is no domain after the @"
    if len(domain) > MAX_DOMAIN:
        return f"the domain is longer than {MAX_DOMAIN} characters"
    if domain.startswith("[") and domain.endswith("]"):
        literal = domain[1:-1]
        try:
            if literal[:5].lower() == "ipv6:":
                ipaddress.IPv6Address(literal[5:])
            else:
                ipaddress.IPv4Address(literal)
        except ValueError:
            return f"{domain} is not an IP address literal"
        return None
    if not all(_LABEL.fullmatch(label) for label in domain.split(".")):
        return (
            "the domain must be names of letters, digits and hyphens (at most 63 each, no"
            " hyphen at either end) separated by single dots"
        )
    return None


class _Rejected(Exception):
    def __init__(self, address: str, reason: str, field: str) -> None:
        self.address, self.reason, self.field = address, reason, field


def _parse_recipient(index: int, raw: Any) -> Recipient:
    where = f"recipients[{index}]"
    if not isinstance(raw, dict):
        raise _Rejected(where, f"{where} must be an object with an email", where)
    email = raw.get("email")
    if not isinstance(email, str) or not email:
        raise _Rejected(where, f"{where}.email is missing", f"{where}.email")
    problem = address_problem(email)
    if problem:
        shown = repr(email) if len(email) <= 100 else repr(email[:100]) + "..."
        # The address keys a journal row and is an index key there (at most 2048 bytes).
        address = email if len(email) <= MAX_ADDRESS else where
        raise _Rejected(
            address, f"{where}.email {shown} is not a valid address: {problem}", f"{where}.email"
        )
    name = raw.get("name") or ""
    if not isinstance(name, str):
        raise _Rejected(email, f"{where}.name must be a string", f"{where}.name")
    # A line break or other control character would reach SES's To header as written.
    if problem := control_problem(f"{where}.name", name):
        raise _Rejected(email, f"{problem} (a name must be one line of text)", f"{where}.name")
    return Recipient(email=email, name=name)


def _no_valid_recipient(rejected: dict[str, RejectedRecipient]) -> str:
    reasons = [r.reason for r in rejected.values()]
    shown = "; ".join(reasons[:5]) + (f"; and {len(reasons) - 5} more" if len(reasons) > 5 else "")
    return f"no valid recipient: {shown}"


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
        raise InvalidRequest(
            "parse request", reason="messageId is missing or empty", field="messageId"
        )

    raw_recipients = data.get("recipients")
    if not isinstance(raw_recipients, list) or not raw_recipients:
        raise InvalidRequest(
            "parse request", key=message_id, reason="no recipients", field="recipients"
        )
    recipients: dict[str, Recipient] = {}
    rejected: dict[str, RejectedRecipient] = {}
    for index, raw in enumerate(raw_recipients):
        try:
            recipient = _parse_recipient(index, raw)
        except _Rejected as bad:
            rejected.setdefault(
                bad.address, RejectedRecipient(bad.address, bad.reason, field=bad.field)
            )
            continue
        recipients.setdefault(recipient.email, recipient)  # a repeat would share the same key
    for address in recipients.keys() & rejected.keys():
        del rejected[address]  # the valid entry is sent; a FAILED row would share its key

    context = data.get("context")
    if context is None:
        context = {}
    if not isinstance(context, dict):
        raise InvalidRequest(
            "parse request", key=message_id, reason="context must be an object", field="context"
        )

    dedupe_id = data.get("dedupeId")
    if dedupe_id is None:
        dedupe_id = ""
    if not isinstance(dedupe_id, str):
        raise InvalidRequest(
            "parse request", key=message_id, reason="dedupeId must be a string", field="dedupeId"
        )

    warning = organization_warning(context)
    request = EmailRequest(
        message_id=message_id,
        recipients=tuple(recipients.values()),
        context=context,
        dedupe_id=dedupe_id,
        rejected=tuple(rejected.values()),
        warnings=(warning,) if warning else (),
    )
    if not request.recipients:
        first = next(iter(rejected.values()), None)
        exc = InvalidRequest(
            "parse request",
            key=message_id,
            reason=_no_valid_recipient(rejected),
            field=first.field if first else "recipients",
        )
        exc.request = request  # the pipeline journals each rejected entry as FAILED
        raise exc
    return request


def parse_complete_request(body: str | bytes) -> EmailRequest:
    """Parse for a caller who can still fix the input (the send API, enqueue_email, send-test):
    any refused recipient or fallback is an InvalidRequest naming it, where the consumer would
    send the rest."""
    request = parse_request(body)
    problems = [r.reason for r in request.rejected] + list(request.warnings)
    if problems:
        # The first problem's field: a refused entry's, else the organizationId the warning is about.
        field = request.rejected[0].field if request.rejected else "context.organizationId"
        raise InvalidRequest(
            "parse request", key=request.message_id, reason="; ".join(problems), field=field
        )
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
