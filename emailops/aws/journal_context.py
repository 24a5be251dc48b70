"""How the journal stores a row's context (bounded under DynamoDB's 400 KB) and its SentAtKey
(see ``emailops.aws.journal``, which names both)."""

from __future__ import annotations

import json
from typing import Any

__all__ = ["MAX_CONTEXT_BYTES", "bounded_context", "sent_at_key"]

# The context's share of a row: with the capped timeline (~60 KB) and the other attributes the
# row stays well under DynamoDB's 400 KB.
MAX_CONTEXT_BYTES = 150_000
_MAX_NAME = 200  # characters of a trimmed value's key


def sent_at_key(timestamp: int) -> str:
    return f"{timestamp:020d}"


def _size(value: Any) -> int:
    return len(json.dumps(value, ensure_ascii=False, default=str).encode())


def bounded_context(context: dict[str, Any]) -> tuple[dict[str, Any], int]:
    """The context as stored: whole when it fits ``MAX_CONTEXT_BYTES``, else with its largest
    top-level values replaced by a "[trimmed: N bytes]" note (the smallest are kept, as many as
    fit). Returns (context, original size in bytes when trimmed, else 0)."""
    total = _size(context)
    if total <= MAX_CONTEXT_BYTES:
        return context, 0
    sizes = {key: _size(key) + _size(value) + 4 for key, value in context.items()}  # ": ", ", "
    keep: set[str] = set()
    budget = MAX_CONTEXT_BYTES - 8192  # room for the notes
    for key in sorted(context, key=sizes.__getitem__):
        if sizes[key] > budget or len(key) > _MAX_NAME:
            break
        keep.add(key)
        budget -= sizes[key]
    stored: dict[str, Any] = {}
    notes, dropped = 8192 - 64, 0
    for key, value in context.items():
        if key in keep:
            stored[key] = value
        elif notes > 0:
            note = f"[trimmed: {sizes[key]} bytes]"
            stored[key[:_MAX_NAME]] = note
            notes -= _size(key[:_MAX_NAME]) + _size(note) + 4
        else:
            dropped += 1
    if dropped:
        stored["[trimmed]"] = f"{dropped} more keys"
    return stored, total
