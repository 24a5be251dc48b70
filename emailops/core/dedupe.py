"""Idempotency keys, byte-identical to the Go consumer's ``EmailRequest.DedupeKey``.

The Go consumer decodes ``context`` into ``map[string]interface{}`` and re-encodes each value with
``encoding/json``; to match it byte for byte we reproduce that encoder: every number is a float64
printed the ES6 way, strings are HTML-escaped, objects have sorted keys, nothing has spaces.
"""

from __future__ import annotations

import hashlib
import math
from decimal import Decimal
from typing import Any

from emailops.core.contract import EmailRequest, go_text

__all__ = [
    "API_NAMESPACE_PREFIX",
    "api_namespace",
    "canonical_context",
    "dedupe_key",
    "go_dedupe_key",
    "go_json",
    "reserved_dedupe_id",
]

_HEX = "0123456789abcdef"
# Go's encodeState escapes these even though they are printable: HTML-significant bytes and the two
# JavaScript line terminators.
_SHORT_ESCAPES = {
    '"': '\\"',
    "\\": "\\\\",
    "\n": "\\n",
    "\r": "\\r",
    "\t": "\\t",
    "\b": "\\b",
    "\f": "\\f",
}
_UNICODE_ESCAPED = {"<", ">", "&", "\u2028", "\u2029"}


def _go_string(value: str) -> str:
    out = ['"']
    for ch in go_text(value):
        if ch in _SHORT_ESCAPES:
            out.append(_SHORT_ESCAPES[ch])
        elif ch < " " or ch in _UNICODE_ESCAPED:
            code = ord(ch)
            out.append("\\u" + "".join(_HEX[(code >> s) & 0xF] for s in (12, 8, 4, 0)))
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def _go_float(value: float) -> str:
    """strconv.AppendFloat(f, 'f' or 'e', -1, 64) as encoding/json uses it (ES6 number format)."""
    if not math.isfinite(value):
        raise ValueError(f"unsupported number {value!r}")
    if value == 0:
        return "-0" if math.copysign(1.0, value) < 0 else "0"
    sign = "-" if value < 0 else ""
    # repr() gives the shortest digits that round-trip, as Go's precision -1 does.
    _, digit_tuple, exponent = Decimal(repr(abs(value))).as_tuple()
    point = len(digit_tuple) + exponent  # value == 0.DIGITS * 10**point
    digits = "".join(map(str, digit_tuple)).rstrip("0")
    if abs(value) < 1e-6 or abs(value) >= 1e21:
        exp = point - 1
        body = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
        # Go prints at least two exponent digits, then encoding/json trims "e-07" to "e-7".
        return f"{sign}{body}e{'-' if exp < 0 else '+'}{abs(exp):02d}".replace("e-0", "e-")
    if point <= 0:
        return f"{sign}0.{'0' * -point}{digits}"
    if point >= len(digits):
        return f"{sign}{digits}{'0' * (point - len(digits))}"
    return f"{sign}{digits[:point]}.{digits[point:]}"


def go_json(value: Any) -> str:
    """Encode a JSON-decoded value exactly as Go's json.Marshal would after decoding to interface{}."""
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, int | float):
        return _go_float(float(value))
    if isinstance(value, str):
        return _go_string(value)
    if isinstance(value, list | tuple):
        return "[" + ",".join(go_json(item) for item in value) + "]"
    if isinstance(value, dict):
        items = sorted(((go_text(k), v) for k, v in value.items()), key=_first)
        return "{" + ",".join(f"{_go_string(k)}:{go_json(v)}" for k, v in items) + "}"
    raise TypeError(f"not a JSON value: {type(value).__name__}")


def canonical_context(context: dict[str, Any] | None) -> str:
    if not context:
        return ""
    # After go_text, code-point order is UTF-8 byte order, as Go sorts.
    items = sorted(((go_text(k), v) for k, v in context.items()), key=_first)
    return "".join(f"{key}={go_json(value)};" for key, value in items)


# The send API's rows live under ``api:<token>:…`` (``api.models.ApiToken.namespace``); a queue
# producer's dedupeId may not start there, or it could plant a row that blocks a token's send.
API_NAMESPACE_PREFIX = "api:"


def api_namespace(token_id: int | str) -> str:
    return f"{API_NAMESPACE_PREFIX}{token_id}"


def reserved_dedupe_id(request: EmailRequest) -> str | None:
    """Why a queue request's dedupeId is refused (it enters the API's key space), or None."""
    if request.namespace or not request.dedupe_id.startswith(API_NAMESPACE_PREFIX):
        return None
    return (
        f"dedupeId {request.dedupe_id[:80]!r} starts with {API_NAMESPACE_PREFIX!r}, the send "
        "API's reserved key space: a queue producer must choose another dedupeId"
    )


def dedupe_key(request: EmailRequest, recipient_email: str) -> str:
    """The journal ``Id`` for one (request, recipient): the Go consumer's key, prefixed by the
    request's namespace when it has one (``api:7:reset-42:pat@example.com``)."""
    key = go_dedupe_key(request, recipient_email)
    return f"{request.namespace}:{key}" if request.namespace else key


def go_dedupe_key(request: EmailRequest, recipient_email: str) -> str:
    """Exactly the Go consumer's ``EmailRequest.DedupeKey`` (the queue path's journal ``Id``)."""
    if request.dedupe_id:
        return f"{request.dedupe_id}:{recipient_email}"
    parts = (request.message_id, recipient_email, canonical_context(request.context))
    return hashlib.sha256(go_text("\x00".join(parts)).encode()).hexdigest()


def _first(pair: tuple[str, Any]) -> str:
    return pair[0]
