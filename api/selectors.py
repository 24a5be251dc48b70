"""Reads for the send API: a token's own journal rows, shown through the manifest's allow-list."""

from __future__ import annotations

from typing import Any

from api.models import ApiToken
from emailops import container
from templates_admin.journal.presentation import mask_context, ordered
from templates_admin.mappings.variables import template_manifest

__all__ = ["journal_row_for_token", "producer_view"]


def producer_view(row: dict[str, Any], manifest: dict[str, list[str]]) -> dict[str, Any]:
    """The row as a producer may see it: of the context, only the keys the manifest declares for
    its messageId (an allow-list: a key nobody declared is never returned, whatever its name),
    and of those, sensitive-looking ones masked as in the console."""
    if "Context" not in row:
        return ordered(row)
    declared = set(manifest.get(str(row.get("MessageId", "")), ()))
    context = row["Context"] if isinstance(row["Context"], dict) else {}
    allowed = {key: value for key, value in context.items() if key in declared}
    return ordered(row | {"Context": mask_context(allowed)})


def journal_row_for_token(*, token: ApiToken, id: str) -> dict[str, Any] | None:
    """The row with this Id if ``token`` wrote it, else None: another token's row and a row the
    API did not write (the queue's, the Go consumer's) look exactly like a missing one. Raises
    EmailOpsError."""
    row = container.current().journal.get(id)
    if row is None or row.get("Producer") != token.namespace:
        return None
    return producer_view(row, template_manifest())
