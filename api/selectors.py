"""Reads for the send API: a token's own journal rows, shown through the manifest's allow-list."""

from __future__ import annotations

import time
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from api.models import ApiToken
from api.schemas import JournalRowOut, journal_row_out
from emailops.core.journal_row import JournalRow
from emailops.core.lease import LeasePolicy
from templates_admin.display import mask_context, mask_row
from templates_admin.mappings.variables import template_manifest

if TYPE_CHECKING:
    from emailops.container import Container

__all__ = ["journal_row_for_token", "producer_view"]


def producer_view(
    row: JournalRow,
    manifest: dict[str, list[str]],
    *,
    lease: LeasePolicy,
    sensitive: Iterable[str],
) -> JournalRowOut:
    """The row as a producer may see it: of the context, only the keys the manifest declares for
    its messageId (an allow-list: a key nobody declared is never returned, whatever its name),
    and of those, sensitive-looking ones masked as in the console."""
    declared = set(manifest.get(row.message_id, ()))
    allowed: dict[str, Any] = {k: v for k, v in row.context.items() if k in declared}
    return journal_row_out(
        # a sensitive value masked wherever the row carries it (the subject...)
        mask_row(row, sensitive),
        context=mask_context(allowed, sensitive),
        now=int(time.time()),
        lease=lease,
    )


def journal_row_for_token(*, token: ApiToken, id: str, adapters: Container) -> JournalRowOut | None:
    """The row with this Id if ``token`` wrote it, else None: another token's row and a row the
    API did not write (the queue's, the Go consumer's) look exactly like a missing one. Raises
    EmailOpsError."""
    row = adapters.journal_reader.read(id)
    if row is None or row.producer != token.namespace:
        return None
    sensitive = adapters.config.console.sensitive_keys
    return producer_view(
        row, template_manifest(adapters=adapters), lease=adapters.lease_policy, sensitive=sensitive
    )
