"""Reads of the journal, shared by the console pages and ``manage.py email_log``.

A search is one of three kinds, decided by what was typed: an email address (a recipient search,
newest first, paged), or otherwise a journal ``Id`` (the dedupe key) or an SES message id.
No search path scans the table: they are GetItem and Queries on the journal's GSIs.
"""

from __future__ import annotations

import hashlib
import json
import re
import time
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass, field, replace
from datetime import datetime
from enum import StrEnum
from typing import TYPE_CHECKING, Any

from django.core import signing
from django.core.exceptions import ValidationError

from emailops.aws.journal_search import (
    NO_DELIVERY_REPORT,
    JournalCriteria,
    JournalPage,
    QueryRun,
    SearchPosition,
)
from emailops.core.compose import Composed
from emailops.core.contract import organization_id_of
from emailops.core.errors import EmailOpsError
from emailops.core.journal_row import JournalRow
from emailops.core.ports import Status
from emailops.core.stored_attributes import StoredAttributes, StoredRow
from templates_admin.display import mask_stored
from templates_admin.drafts.selectors import VersionNotFound, version_source
from templates_admin.journal.delivery import DELIVERY_STATUSES
from templates_admin.journal.presentation import branding, mask_context
from templates_admin.models import EmailAction

if TYPE_CHECKING:
    from emailops.container import Container
    from emailops.core.ports import MappingStore

__all__ = [
    "EXPORT_MAX_ROWS",
    "MAX_LIMIT",
    "PAGE_SIZE",
    "EmailPreview",
    "InvalidCursor",
    "JournalEntry",
    "JournalSearchError",
    "JournalSearchResult",
    "SearchKind",
    "journal_email_preview",
    "journal_email_renderable",
    "journal_entry",
    "journal_search",
    "journal_search_pages",
    "looks_like_email",
    "parse_delivery_status",
    "parse_status",
]

PAGE_SIZE = 50
MAX_LIMIT = 500
EXPORT_MAX_ROWS = 100_000  # a CSV export stops here and says so
_CURSOR_SALT = "templates_admin.journal.cursor"
_EMAIL = re.compile(r"^[^@\s]+@[^@\s]+$")


class JournalSearchError(ValueError):
    """The search as asked cannot run; the message says why, for the person who asked."""


class InvalidCursor(JournalSearchError):
    pass


class SearchKind(StrEnum):
    RECIPIENT = "recipient"
    ID = "journal Id"
    SES_MESSAGE_ID = "SES message id"
    ID_OR_SES_MESSAGE_ID = "journal Id or SES message id"  # looked up as both, found neither


def looks_like_email(text: str) -> bool:
    """Loose on purpose: rows the Go consumer wrote hold whatever address producers sent."""
    return bool(_EMAIL.match(text))


def parse_delivery_status(delivery: str | None) -> str | None:
    """DELIVERED, BOUNCED... or NONE (accepted by SES, no delivery report yet), any case."""
    if not delivery:
        return None
    value = delivery.strip().upper()
    known = (*DELIVERY_STATUSES, NO_DELIVERY_REPORT)
    if value not in known:
        raise JournalSearchError(f"delivery must be one of {', '.join(known)}, not {delivery!r}")
    return value


def parse_status(status: str | None) -> str | None:
    if not status:
        return None
    try:
        return Status(status.strip().upper()).value
    except ValueError:
        known = ", ".join(s.value for s in Status)
        raise JournalSearchError(f"status must be one of {known}, not {status!r}") from None


@dataclass(frozen=True)
class JournalSearchResult:
    query: str
    kind: SearchKind
    rows: list[JournalRow]
    runs: tuple[QueryRun, ...] = ()
    # The rows' attributes as stored, masked, in the rows' order (``email_log --json``'s).
    stored: tuple[StoredAttributes, ...] = ()
    next_cursor: str | None = None  # older, newest first
    previous_cursor: str | None = None  # newer, newest first
    partial: bool = False  # the page's read budget ran out before it was full
    problems: tuple[str, ...] = ()
    filters_ignored: bool = False  # filters apply to recipient searches only

    @property
    def calls(self) -> int:
        return sum(run.calls for run in self.runs)


def journal_search(
    *,
    adapters: Container,
    query: str,
    message_id: str | None = None,
    status: str | None = None,
    delivery: str | None = None,
    since: datetime | None = None,
    until: datetime | None = None,
    cursor: str | None = None,
    limit: int = PAGE_SIZE,
    oldest_first: bool = False,
) -> JournalSearchResult:
    """One page of rows for ``query``: a recipient address, a journal Id or an SES message id.

    Raises JournalSearchError for input that cannot be searched (and InvalidCursor for a cursor
    that was altered or belongs to another search); EmailOpsError when AWS fails.
    """
    query = query.strip()
    if not query:
        raise JournalSearchError("type an email address, a journal Id or an SES message id")
    if not 1 <= limit <= MAX_LIMIT:
        raise JournalSearchError(f"limit must be between 1 and {MAX_LIMIT}")
    delivery_status = parse_delivery_status(delivery)
    status = parse_status(status)
    if delivery_status == NO_DELIVERY_REPORT and status is None:
        status = Status.SENT.value  # "no report yet" is about emails SES accepted
    criteria = JournalCriteria(
        message_id=(message_id or "").strip() or None,
        status=status,
        since=_epoch(since),
        until=_epoch(until),
        delivery_status=delivery_status,
    )
    if (
        criteria.since is not None
        and criteria.until is not None
        and criteria.since > criteria.until
    ):
        raise JournalSearchError("the date range ends before it starts")
    if ":" in query or not looks_like_email(query):
        found = _lookup(query, adapters=adapters)
        return replace(found, filters_ignored=criteria != JournalCriteria())

    fingerprint = _fingerprint(query, criteria, oldest_first)
    position = _decode_cursor(cursor, fingerprint) if cursor else None
    page = adapters.journal_search.recipient_page(
        query, criteria, position=position, limit=limit, newest_first=not oldest_first
    )
    return JournalSearchResult(
        query=query,
        kind=SearchKind.RECIPIENT,
        **_masked(page.rows, page.stored, adapters.config.console.sensitive_keys),
        runs=page.runs,
        next_cursor=_encode_cursor(page.next, fingerprint),
        previous_cursor=_encode_cursor(page.previous, fingerprint),
        partial=page.partial,
        problems=page.problems,
    )


def journal_search_pages(
    *,
    adapters: Container,
    query: str,
    max_rows: int | None = None,
    page_size: int = MAX_LIMIT,
    **criteria: Any,
) -> Iterator[JournalSearchResult]:
    """Every page of a search, following its cursors, until the rows run out or ``max_rows``
    (None: no limit). ``criteria``: journal_search's filters (message_id, status, delivery, since,
    until, oldest_first).

    Lazy: each page is one journal_search call, read when iterated and bounded by the same read
    budget as a console page. The last page is trimmed to ``max_rows``; when it still has a
    ``next_cursor``, more rows match than were read.
    """
    if max_rows is not None and max_rows < 1:
        raise JournalSearchError("the row limit must be at least 1")
    cursor, seen = None, 0
    while True:
        wanted = page_size if max_rows is None else min(page_size, max_rows - seen)
        page = journal_search(
            adapters=adapters, query=query, cursor=cursor, limit=wanted, **criteria
        )
        seen += len(page.rows)
        yield page
        cursor = page.next_cursor
        if not cursor or (max_rows is not None and seen >= max_rows):
            return


def _masked(
    rows: Sequence[JournalRow], stored: Sequence[StoredAttributes], sensitive: Sequence[str]
) -> dict[str, Any]:
    """JournalSearchResult's ``rows`` and ``stored``, each row's mask applied to both."""
    pairs = zip(rows, stored, strict=True)
    found = [mask_stored(StoredRow(r, s), sensitive) for r, s in pairs]
    return {"rows": [f.row for f in found], "stored": tuple(f.attributes for f in found)}


def _lookup(query: str, *, adapters: Container) -> JournalSearchResult:
    """A journal Id (GetItem) or, failing that, an SES message id (SesMessageIdIndex)."""
    sensitive = adapters.config.console.sensitive_keys
    found = adapters.journal_reader.read_stored(query)
    table = adapters.journal.table
    get = QueryRun("GetItem", table, f'Id = "{query}"', calls=1, matched=int(found is not None))
    if found is not None:
        masked = _masked([found.row], [found.attributes], sensitive)
        return JournalSearchResult(query=query, kind=SearchKind.ID, **masked, runs=(get,))
    page: JournalPage = adapters.journal_search.by_ses_message_id(query)
    return JournalSearchResult(
        query=query,
        kind=SearchKind.SES_MESSAGE_ID if page.rows else SearchKind.ID_OR_SES_MESSAGE_ID,
        **_masked(page.rows, page.stored, sensitive),
        runs=(get, *page.runs),
        problems=page.problems,
    )


def _epoch(moment: datetime | None) -> int | None:
    if moment is None:
        return None
    if moment.tzinfo is None:
        raise JournalSearchError("dates must carry a time zone")
    return int(moment.timestamp())


def _fingerprint(query: str, criteria: JournalCriteria, oldest_first: bool) -> str:
    """Ties a cursor to its search: a cursor pasted onto other filters is refused, not misread."""
    text = json.dumps([query, asdict(criteria), oldest_first], sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _encode_cursor(position: SearchPosition | None, fingerprint: str) -> str | None:
    if position is None:
        return None
    payload = {
        "f": fingerprint,
        "s": position.segment,
        "k": position.start_key,
        "b": position.backward,
        "l": position.legacy_plan,
    }
    return signing.dumps(payload, salt=_CURSOR_SALT, compress=True)


def _decode_cursor(cursor: str, fingerprint: str) -> SearchPosition:
    try:
        payload = signing.loads(cursor, salt=_CURSOR_SALT)
    except signing.BadSignature:
        raise InvalidCursor(
            "this page link is damaged or was altered; start the search again"
        ) from None
    if payload.get("f") != fingerprint:
        raise InvalidCursor("this page link belongs to a different search; start the search again")
    return SearchPosition(
        segment=int(payload["s"]),
        start_key=payload["k"],
        backward=bool(payload["b"]),
        legacy_plan=bool(payload["l"]),
    )


@dataclass(frozen=True)
class JournalEntry:
    """One journal row with what the console knows around it."""

    key: str
    row: JournalRow | None
    resends: list[EmailAction] = field(default_factory=list)  # made from this row
    resent_from: EmailAction | None = None  # the resend that created this row
    lease_ends_at: int | None = None  # when a QUEUED row's claim ends (or ended)
    # Its attributes as stored, masked: the support view's raw listing (empty without a row).
    stored: StoredAttributes = field(default_factory=StoredAttributes)


def journal_entry(*, adapters: Container, key: str) -> JournalEntry:
    """The row at ``key`` (masked) with its resends and its stored attributes: one read."""
    found = adapters.journal_reader.read_stored(key)
    if found is not None:
        found = mask_stored(found, adapters.config.console.sensitive_keys)
    row = found.row if found is not None else None
    actions = EmailAction.objects.filter(kind=EmailAction.Kind.RESEND).select_related("user")
    return JournalEntry(
        key=key,
        row=row,
        resends=list(actions.filter(original_key=key)),
        resent_from=actions.filter(journal_key=key).first(),
        lease_ends_at=adapters.lease_policy.ends_at(row) if row else None,
        stored=found.attributes if found is not None else StoredAttributes(),
    )


@dataclass(frozen=True)
class EmailPreview:
    """The email re-rendered with the row's masked context: from the template version the row
    records (``TemplateVersion``) when its bytes are known, else from today's template
    (``sent_version`` False)."""

    composed: Composed | None
    branding: str = ""
    error: str = ""
    rendered_at: int = 0
    sent_version: bool = False  # rendered with the version the row records


def _recorded_source(row: JournalRow, adapters: Container) -> tuple[str, str, str] | None:
    """(key, version, source) of the template version the row was sent with, if known."""
    key, version = row.template_key, row.template_version
    if not key or not version:
        return None
    try:
        store = adapters.template_store
        return key, version, version_source(key=key, version_id=version, template_store=store)
    except (VersionNotFound, ValidationError, EmailOpsError, UnicodeDecodeError):
        return None


def journal_email_renderable(*, row: JournalRow, mapping_store: MappingStore) -> bool:
    """Whether "View email" can show something: the row records its template version, or its
    messageId still has a mapping (one GetItem). A row for an unknown messageId cannot be."""
    if row.template_key and row.template_version:
        return True
    return bool(row.message_id) and (mapping_store.get_mapping(row.message_id) is not None)


def journal_email_preview(*, adapters: Container, row: JournalRow) -> EmailPreview:
    context = mask_context(dict(row.context), adapters.config.console.sensitive_keys)
    message_id = row.message_id
    composer = adapters.composer()
    recorded = _recorded_source(row, adapters)
    try:
        if recorded is not None:
            key, version, source = recorded
            composed = composer.compose_source(
                composer.mapping_for(message_id), context, key=key, source=source, version=version
            )
        else:
            composed = composer.compose(message_id, context, organization_id_of(context))
    except EmailOpsError as exc:
        return EmailPreview(composed=None, error=exc.describe(), rendered_at=int(time.time()))
    return EmailPreview(
        composed=composed,
        branding=branding(composed.template_key),
        rendered_at=int(time.time()),
        sent_version=recorded is not None,
    )
