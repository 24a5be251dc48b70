"""One recipient's copy of a rendered email: for mail its preferences may refuse, with its
one-click unsubscribe URL in the List-Unsubscribe headers (RFC 8058) and in the template's
``unsubscribeUrl``. Everything else is the record's render as it is."""

from __future__ import annotations

from emailops.core.compose import Composed, Composer
from emailops.core.contract import EmailRequest, Recipient
from emailops.core.events import EventLog
from emailops.core.header_text import control_problem
from emailops.core.preferences import UnsubscribeLinks, may_be_refused

__all__ = ["UNSUBSCRIBE_URL", "NoUnsubscribeLinks", "personalised"]

UNSUBSCRIBE_URL = "unsubscribeUrl"  # the template variable of a recipient's unsubscribe link

Headers = tuple[tuple[str, str], ...]


class NoUnsubscribeLinks:
    """No public page to unsubscribe on: no link, no header (``UnsubscribeLinks``)."""

    def url(self, *, address: str, category: str, organization: str | None) -> str | None:
        return None


def personalised(
    composer: Composer,
    links: UnsubscribeLinks,
    request: EmailRequest,
    recipient: Recipient,
    composed: Composed,
    log: EventLog,
) -> tuple[Composed, Headers]:
    """The recipient's copy and its extra headers. A render error propagates (the recipient is
    tried again or fails, as for the record's render)."""
    mapping = composed.mapping
    if not may_be_refused(category=mapping.category, priority=mapping.priority):
        return composed, ()
    url = links.url(
        address=recipient.email, category=mapping.category, organization=request.organization_id
    )
    if not url:
        return composed, ()
    if " " in url or control_problem("unsubscribe URL", url):
        log.warning("unsubscribe.bad_url", detail="not one line without spaces: no header")
        return composed, ()
    personal = composer.personalise(composed, {**request.context, UNSUBSCRIBE_URL: url})
    return personal, (
        ("List-Unsubscribe", f"<{url}>"),
        ("List-Unsubscribe-Post", "List-Unsubscribe=One-Click"),
    )
