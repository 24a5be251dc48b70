"""What travels on our queues: a received message, a queue's facts, and the message attributes
a copy carries (producers' own, packed into one when they do not fit beside ours)."""

from __future__ import annotations

import base64
import json
import time
from dataclasses import dataclass, field
from typing import Any

from emailops.core.errors import TransientError

__all__ = [
    "FAILURE_REASON_ATTRIBUTE",
    "OVERFLOW_ATTRIBUTE",
    "OriginalKept",
    "QueueDepth",
    "QueueInfo",
    "QueueMessage",
    "forwardable_attributes",
    "message_bytes",
    "producer_attributes",
]

FAILURE_REASON_ATTRIBUTE = "FailureReason"
# Producer attributes that do not fit beside ours travel inside this one, as JSON
# {name: {DataType, StringValue | BinaryValue (base64)}}: a copy never drops one silently.
OVERFLOW_ATTRIBUTE = "EmailOpsAttributes"


class OriginalKept(TransientError):
    """The copy was sent but the original could not be deleted. The original is hidden as long
    as SQS allows (12 hours) when possible, so the copy, which carries the state, is decided
    first; when the original comes back, its rows are already SENT (or FAILED) and it ends."""


def message_bytes(body: str, attributes: dict[str, Any]) -> int:
    """A message's size as SQS counts it against MaximumMessageSize: body plus every attribute's
    name, data type and value."""
    size = len(body.encode())
    for name, value in attributes.items():
        size += len(name.encode()) + len(str(value.get("DataType", "")).encode())
        if "StringValue" in value:
            size += len(str(value["StringValue"]).encode())
        elif "BinaryValue" in value:
            size += len(value["BinaryValue"])
    return size


def packed_attribute(value: dict[str, Any]) -> dict[str, Any]:
    if isinstance(value.get("BinaryValue"), bytes | bytearray):
        return value | {"BinaryValue": base64.b64encode(value["BinaryValue"]).decode()}
    return value


def _unpacked(value: dict[str, Any]) -> dict[str, Any]:
    if isinstance(value.get("BinaryValue"), str):
        return value | {"BinaryValue": base64.b64decode(value["BinaryValue"])}
    return value


def producer_attributes(attributes: dict[str, Any], *, drop: tuple[str, ...] = ()) -> dict:
    """The producer's own attributes, those that travelled inside ``OVERFLOW_ATTRIBUTE`` too."""
    found = forwardable_attributes(attributes, drop=(OVERFLOW_ATTRIBUTE, *drop))
    packed = (attributes.get(OVERFLOW_ATTRIBUTE) or {}).get("StringValue")
    if packed:
        try:
            inner = json.loads(packed)
        except ValueError:
            inner = None
        if isinstance(inner, dict):
            found |= {
                str(k): _unpacked(v)
                for k, v in inner.items()
                if isinstance(v, dict) and str(k) not in drop
            }
    return found


@dataclass(frozen=True)
class QueueMessage:
    message_id: str
    receipt_handle: str
    body: str
    receive_count: int = 1
    attributes: dict[str, Any] = field(default_factory=dict)  # message attributes, as SQS gave them
    sent_at: int = 0  # epoch seconds SQS first accepted it (receive_hidden only)
    # time.monotonic() when this receive began: SQS counts its 12-hour visibility ceiling from it.
    received_at: float = field(default_factory=time.monotonic, compare=False)

    def string_attribute(self, name: str) -> str | None:
        return (self.attributes.get(name) or {}).get("StringValue")


@dataclass(frozen=True)
class QueueInfo:
    visibility_timeout: int
    dead_letter_url: str | None
    max_receive_count: int | None


@dataclass(frozen=True)
class QueueDepth:
    visible: int  # waiting to be received
    in_flight: int  # received (or peeked) and not yet deleted or released

    @property
    def total(self) -> int:
        return self.visible + self.in_flight


def forwardable_attributes(
    attributes: dict[str, Any], *, drop: tuple[str, ...] = (FAILURE_REASON_ATTRIBUTE,)
) -> dict[str, Any]:
    """Message attributes as SendMessage takes them, without ``drop`` (e.g. a stale reason)."""
    keep = ("DataType", "StringValue", "BinaryValue")
    return {
        name: {k: v for k, v in value.items() if k in keep}
        for name, value in attributes.items()
        if name not in drop
    }
