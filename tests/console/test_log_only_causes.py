"""Issue 36, point 4: a log-only row says its actual cause, once, in journal_words' words: which
send control, the loop detector's count and window, the preference and when it was set, the
safeguard's cap. The details are the ones the send guard itself writes (a Safeguard over the
in-memory counters), so a change of its wording shows here."""

from __future__ import annotations

from html import unescape

import pytest
from django.urls import reverse

from emailops.core.send_guard import OverCap, Safeguard
from tests.fakes import InMemoryRateCounters
from tests.journal_factory import BASE_TIME, journal_row, put_rows

pytestmark = pytest.mark.django_db

BASE = "/admin/templates_admin/emailjournalpage/"
GENERIC = "a send control, the suppression list or the rate safeguard kept it back"


def _guard_detail(**kwargs) -> str:
    guard = Safeguard(counters=InMemoryRateCounters(), **kwargs)
    verdict = None
    for n in range(8):
        verdict = guard.check(message_id="welcome", recipient="a@example.com", key=f"k{n}", now=0)
    return verdict.detail


def _row(address: str, reason: str, detail: str) -> dict:
    return journal_row(
        address, at=BASE_TIME, LoggedOnly=True, LoggedOnlyReason=reason, LoggedOnlyDetail=detail
    )


CASES = {
    "loop@example.com": (
        ("loop", _guard_detail(loop_limit=5)),
        "a loop: more than 5 different requests for messageId welcome to this recipient "
        "within one clock hour (the loop detector)",
    ),
    "cap@example.com": (
        ("rate-safeguard", _guard_detail(loop_limit=0, global_cap=3, over_cap=OverCap.LOG_ONLY)),
        "over the rate safeguard's cap of 3 sends a minute (all email)",
    ),
    "held@example.com": (
        (
            "rate-safeguard",
            _guard_detail(loop_limit=0, message_cap=2, hold_max_seconds=0),
        ),
        "over the rate safeguard's cap of 2 sends a minute (messageId welcome), held 0 s",
    ),
    "stop@example.com": (("service-stop", "SEND_ENABLED is false"), "SEND_ENABLED=false"),
    "panic@example.com": (
        ("service-stop", "emergency stop: SES account under review"),
        "the console's emergency stop was on (SES account under review)",
    ),
    "unsub@example.com": (
        ("unsubscribed", "unsubscribed from Newsletters on 2026-05-01 (one-click)"),
        "the recipient unsubscribed from Newsletters on 2026-05-01 (one-click)",
    ),
}


@pytest.fixture
def support(aws, client, make_user):
    put_rows(
        aws.dynamodb,
        "email-journal",
        [_row(address, *stored) for address, (stored, _) in CASES.items()],
    )
    client.force_login(make_user("Support"))
    return client


@pytest.mark.parametrize("address", CASES)
def test_each_log_only_row_names_its_cause_once(support, address):
    (reason, detail), cause = CASES[address]
    listing = unescape(support.get(BASE, {"q": address}).content.decode())
    assert "not delivered: " in listing and cause in listing
    start = listing.index('id="journal-results"')
    results = listing[start : listing.index("</table>", start)]
    assert results.count(cause) == 1, "the result list says the cause once"

    key = _row(address, reason, detail)["Id"]
    page = unescape(
        support.get(reverse("admin:templates_admin_journal_detail", args=[key])).content.decode()
    )
    status = page[
        page.index('id="journal-status"') : page.index("</div>", page.index('id="journal-status"'))
    ]
    assert cause in status
    assert status.count(cause) == 1
    assert GENERIC not in page
    assert "(loop:" not in page and "a loop: loop" not in page
