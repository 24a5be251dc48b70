"""Masking that follows the value. The context values under a sensitive key (one containing a word
of ``JOURNAL_SENSITIVE_KEYS``: token, password, code...) are masked in the context, and so is every
copy of them wherever a row's text carries one: a subject rendered as "Your code is 981276", an
error, a log-only detail, the stored attributes. Values shorter than ``MIN_MASKED_VALUE``
characters are masked only under their key: masking "42" everywhere would mangle every text."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import replace
from typing import Any

from emailops.core.journal_row import DeliveryState, JournalRow
from emailops.core.stored_attributes import AttributeRole, StoredAttributes

__all__ = ["MASK", "MIN_MASKED_VALUE", "RowMask", "mask_context"]

MASK = "••••••"
MIN_MASKED_VALUE = 4


def _sensitive(key: Any, words: tuple[str, ...]) -> bool:
    lowered = str(key).lower()
    return any(word in lowered for word in words)


def mask_context(value: Any, words: Iterable[str]) -> Any:
    """A copy with the value of every key that contains a sensitive word masked, at any depth."""
    words = tuple(words)
    if isinstance(value, Mapping):
        return {
            key: MASK if _sensitive(key, words) else mask_context(item, words)
            for key, item in value.items()
        }
    if isinstance(value, list | tuple):
        return [mask_context(item, words) for item in value]
    return value


def _leaves(value: Any) -> Iterable[str]:
    if isinstance(value, Mapping):
        for item in value.values():
            yield from _leaves(item)
    elif isinstance(value, list | tuple):
        for item in value:
            yield from _leaves(item)
    elif value is not None and not isinstance(value, bool):
        yield str(value)


def _secrets(value: Any, words: tuple[str, ...]) -> set[str]:
    """The scalar values found under a sensitive key, at any depth."""
    found: set[str] = set()
    if isinstance(value, Mapping):
        for key, item in value.items():
            if _sensitive(key, words):
                found.update(text for text in _leaves(item) if text)
            else:
                found |= _secrets(item, words)
    elif isinstance(value, list | tuple):
        for item in value:
            found |= _secrets(item, words)
    return found


class RowMask:
    """What one row's context makes secret, and that secret masked in any text of the row."""

    def __init__(self, context: Mapping[str, Any], words: Iterable[str]) -> None:
        self.words = tuple(words)
        values = sorted(
            (v for v in _secrets(context, self.words) if len(v) >= MIN_MASKED_VALUE),
            key=len,
            reverse=True,  # the longest first: a secret that contains another is masked whole
        )
        self._pattern = re.compile("|".join(map(re.escape, values))) if values else None

    def text(self, text: str) -> str:
        return self._pattern.sub(MASK, text) if self._pattern and text else text

    def value(self, value: Any) -> Any:
        """Any stored value: strings masked, containers copied with their strings masked."""
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, Mapping):
            return {key: self.value(item) for key, item in value.items()}
        if isinstance(value, list | tuple):
            return [self.value(item) for item in value]
        return value

    def row(self, row: JournalRow) -> JournalRow:
        """The row as a reader may see it: its context masked by key, every text by value."""
        delivery: DeliveryState = replace(
            row.delivery, diagnostic=self.text(row.delivery.diagnostic)
        )
        return replace(
            row,
            subject=self.text(row.subject),
            error=self.text(row.error),
            logged_only_detail=self.text(row.logged_only_detail),
            context=mask_context(row.context, self.words),
            delivery=delivery,
            timeline=tuple(replace(e, summary=self.text(e.summary)) for e in row.timeline),
        )

    def stored(self, attributes: StoredAttributes) -> StoredAttributes:
        """The row's stored attributes as a reader may see them: the context masked by key, every
        other value by value."""
        return StoredAttributes(
            tuple(
                replace(
                    item,
                    value=mask_context(item.value, self.words)
                    if item.role == AttributeRole.CONTEXT
                    else self.value(item.value),
                )
                for item in attributes
            )
        )

    @classmethod
    def masked(cls, row: JournalRow, words: Iterable[str]) -> JournalRow:
        return cls(row.context, words).row(row)
