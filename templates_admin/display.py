"""How every console area shows the two things they all show: masked request context and epoch
times. Shared (the bottom layer with ``console``, ``roles`` and ``models``), so an area that shows a
time or a context does not have to import the journal area for it."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any

from django.utils import timezone

from emailops.core import masking as core_masking
from emailops.core.journal_row import JournalRow
from emailops.core.masking import MASK, RowMask
from emailops.core.stored_attributes import StoredRow
from templates_admin.categories import category_label

__all__ = [
    "MASK",
    "category_label",
    "local_text",
    "mask_context",
    "mask_row",
    "mask_stored",
    "moment",
    "utc_text",
]


# ``sensitive`` below is the configured words (``config.console.sensitive_keys``), handed down by
# the caller from its container.


def mask_context(value: Any, sensitive: Iterable[str]) -> Any:
    """A copy with the value of every key that contains a sensitive word masked, at any depth."""
    return core_masking.mask_context(value, sensitive)


def mask_row(row: JournalRow, sensitive: Iterable[str]) -> JournalRow:
    """The row as the console, ``email_log`` and the API show it: a sensitive value masked in
    its context and wherever else the row's text carries it (the subject, the error...)."""
    return RowMask.masked(row, sensitive)


def mask_stored(stored: StoredRow, sensitive: Iterable[str]) -> StoredRow:
    """The row and its stored attributes as the support view shows them, masked as ``mask_row``."""
    mask = RowMask(stored.row.context, sensitive)
    return StoredRow(mask.row(stored.row), mask.stored(stored.attributes))


def moment(epoch: int | float | None) -> datetime | None:
    """An epoch-seconds attribute as an aware datetime in the console's time zone."""
    if epoch is None or isinstance(epoch, bool) or not isinstance(epoch, int | float):
        return None
    return timezone.localtime(datetime.fromtimestamp(epoch, UTC))


def local_text(epoch: int | float | None) -> str:
    when = moment(epoch)
    return when.strftime("%Y-%m-%d %H:%M:%S %Z") if when else ""


def utc_text(epoch: int | float | None) -> str:
    when = moment(epoch)
    return when.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S UTC") if when else ""
