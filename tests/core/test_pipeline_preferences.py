"""Recipient preferences in the pipeline: a categorised, non-critical email to a recipient who
unsubscribed from its category is journaled log-only (reason ``unsubscribed``, the detail saying
from what, when and how), SES is called zero times and email.not_delivered is emitted; critical or
uncategorised mail is never held. A store that cannot answer holds the recipient back, to be tried
again. Mail that may be refused carries the one-click unsubscribe headers (RFC 8058) and the
template gets ``unsubscribeUrl``."""

from __future__ import annotations

import contextlib
from dataclasses import replace

import pytest

from emailops.core.errors import TransientError
from emailops.core.pipeline import Action
from emailops.core.preference_cache import CachedPreferenceStore, NullUnsubscribeLinks
from emailops.core.preferences import HowChanged, Preference
from tests.core.test_pipeline import Stack, request_body
from tests.fakes import RecordingOutbox

MESSAGE_ID = "dataset-publication-accepted"
TWO = request_body(
    recipients=[{"name": "", "email": "a@example.com"}, {"name": "", "email": "b@example.com"}],
    datasetName="D",
)
AT = 1796212800  # 2026-12-02T12:00:00Z


class DictPreferences:
    def __init__(self, *preferences: Preference) -> None:
        self.items = {(p.address, p.category): p for p in preferences}
        self.reads: list[tuple[str, str]] = []
        self.error: Exception | None = None

    def get(self, address: str, category: str) -> Preference | None:
        self.reads.append((address, category))
        if self.error is not None:
            raise self.error
        return self.items.get((address.lower(), category))

    def of_address(self, address):
        return [p for (a, _), p in self.items.items() if a == address]

    def set(self, preference):
        self.items[(preference.address, preference.category)] = preference

    def remove_address(self, address):
        return 0


class FixedLinks:
    def __init__(self, url: str | None = "https://email.example.org/u/tok3n?c=activity") -> None:
        self.url_value = url
        self.asked: list[dict] = []

    def url(self, *, address, category, organization):
        self.asked.append({"address": address, "category": category, "organization": organization})
        return self.url_value


def categorised(stack: Stack, *, category="dataset-activity", priority="normal") -> None:
    mapping = stack.mappings.rows[MESSAGE_ID]
    stack.mappings.rows[MESSAGE_ID] = replace(mapping, category=category, priority=priority)


def a_unsubscribed(category="dataset-activity", subscribed=False) -> Preference:
    return Preference(
        "a@example.com", category, subscribed, HowChanged.ONE_CLICK, AT, "Dataset activity"
    )


@pytest.fixture
def stack() -> Stack:
    stack = Stack()
    stack.pipeline.outbox = RecordingOutbox()
    categorised(stack)
    return stack


def test_an_unsubscribed_recipient_is_journaled_log_only_and_never_sent(stack):
    preferences = DictPreferences(a_unsubscribed())
    stack.use(preferences=preferences)

    outcome = stack.process(TWO)

    assert outcome.action is Action.DELETE
    row = stack.row(TWO, "a@example.com")
    assert row["Status"] == "SENT" and row["LoggedOnly"] is True and "SesMessageId" not in row
    assert row["LoggedOnlyReason"] == "unsubscribed"
    assert row["LoggedOnlyDetail"] == (
        "unsubscribed from Dataset activity on 2026-12-02 (one-click)"
    )
    assert [e.to for e in stack.sender.sent] == ["b@example.com"]  # only its own recipient
    assert stack.row(TWO, "b@example.com")["SesMessageId"] == "ses-1"
    assert ("a@example.com", "dataset-activity") in preferences.reads
    kinds = [(e.type, e.facts.get("reason")) for e in stack.pipeline.outbox.events]
    assert ("email.not_delivered", "unsubscribed") in kinds


def test_a_redelivery_journals_nothing_again_and_emits_nothing_again(stack):
    stack.use(preferences=DictPreferences(a_unsubscribed()))
    one = request_body(recipients=[{"name": "", "email": "a@example.com"}], datasetName="D")
    stack.process(one)
    stack.process(one)

    assert stack.sender.sent == []
    assert [e.type for e in stack.pipeline.outbox.events] == ["email.not_delivered"]


@pytest.mark.parametrize(
    ("category", "priority", "preference"),
    [
        ("dataset-activity", "critical", a_unsubscribed()),  # critical mail is never held
        ("", "normal", a_unsubscribed("")),  # uncategorised: transactional
        ("dataset-activity", "normal", a_unsubscribed("newsletter")),  # another category
        ("dataset-activity", "normal", a_unsubscribed(subscribed=True)),  # subscribed again
    ],
)
def test_mail_the_preference_does_not_cover_is_sent(stack, category, priority, preference):
    categorised(stack, category=category, priority=priority)
    preferences = DictPreferences(preference)
    stack.use(preferences=preferences)

    stack.process(TWO)

    assert len(stack.sender.sent) == 2
    if not category or priority == "critical":
        assert preferences.reads == []  # no read at all for mail that cannot be refused


def test_a_store_that_cannot_answer_holds_the_recipient_back_to_be_tried_again(stack):
    preferences = DictPreferences(a_unsubscribed())
    stack.use(preferences=preferences)
    preferences.error = TransientError("read preference", key="a@example.com", reason="timeout")

    outcome = stack.process(TWO)

    assert outcome.action is Action.RETRY
    assert stack.sender.sent == []
    assert stack.row(TWO, "a@example.com") is None  # never claimed, never FAILED
    assert stack.pipeline.outbox.events == []

    preferences.error = None
    stack.process(TWO)
    assert [e.to for e in stack.sender.sent] == ["b@example.com"]
    assert stack.row(TWO, "a@example.com")["LoggedOnlyReason"] == "unsubscribed"


def test_the_cache_reads_the_store_once_within_its_seconds_and_never_keeps_an_error():
    now = [0.0]
    inner = DictPreferences(a_unsubscribed())
    cache = CachedPreferenceStore(
        inner, seconds=5, lock=contextlib.nullcontext(), clock=lambda: now[0]
    )

    assert cache.get("A@Example.com", "dataset-activity") == a_unsubscribed()
    assert cache.get("a@example.com", "dataset-activity") == a_unsubscribed()
    assert cache.get("b@example.com", "dataset-activity") is None
    assert cache.get("b@example.com", "dataset-activity") is None  # a miss is kept too
    assert len(inner.reads) == 2

    inner.items.clear()
    now[0] = 4.9
    assert cache.get("a@example.com", "dataset-activity") is not None  # within 5 s: as it was
    now[0] = 5.1
    assert cache.get("a@example.com", "dataset-activity") is None  # after: the change shows

    inner.error = TransientError("read preference", key="a", reason="timeout")
    now[0] = 20
    with pytest.raises(TransientError):
        cache.get("a@example.com", "dataset-activity")
    inner.error = None
    assert cache.get("a@example.com", "dataset-activity") is None
    assert len(inner.reads) == 5


def test_the_cache_forgets_an_address_it_writes_and_is_bounded():
    inner = DictPreferences()
    cache = CachedPreferenceStore(inner, seconds=60, lock=contextlib.nullcontext(), max_entries=2)
    assert cache.get("a@example.com", "dataset-activity") is None
    cache.set(a_unsubscribed())
    assert cache.get("a@example.com", "dataset-activity") == a_unsubscribed()
    for address in ("b@example.com", "c@example.com", "d@example.com"):
        cache.get(address, "dataset-activity")
    assert len(cache) == 2


def test_refusable_mail_carries_the_one_click_headers_and_the_template_its_url(stack):
    stack.templates.templates[f"custom/O367/{MESSAGE_ID}.html"] = (
        '<p>Branded {{.datasetName}}</p><a href="{{ unsubscribeUrl }}">Unsubscribe</a>'
    )
    stack.pipeline.unsubscribe_links = links = FixedLinks()
    stack.use(preferences=DictPreferences())
    body = request_body(
        recipients=[{"name": "", "email": "a@example.com"}], datasetName="D", organizationId=367
    )

    stack.process(body)

    [email] = stack.sender.sent
    url = "https://email.example.org/u/tok3n?c=activity"
    assert email.headers == (
        ("List-Unsubscribe", f"<{url}>"),
        ("List-Unsubscribe-Post", "List-Unsubscribe=One-Click"),
    )
    assert links.asked == [
        {"address": "a@example.com", "category": "dataset-activity", "organization": "367"}
    ]
    assert 'href="https://email.example.org/u/tok3n?c=activity"' in email.html
    assert email.html.startswith("<p>Branded D</p>")
    assert url in email.text
    assert "unsubscribeUrl" not in stack.row(body, "a@example.com")["Context"]  # not journaled


@pytest.mark.parametrize(
    ("category", "priority", "links"),
    [
        ("dataset-activity", "critical", FixedLinks()),
        ("", "normal", FixedLinks()),
        ("dataset-activity", "normal", NullUnsubscribeLinks()),
        ("dataset-activity", "normal", FixedLinks("https://x.test/u\r\nBcc: evil@x.test")),
    ],
)
def test_other_mail_carries_no_unsubscribe_header(stack, category, priority, links):
    categorised(stack, category=category, priority=priority)
    stack.pipeline.unsubscribe_links = links

    stack.process(TWO)

    assert [e.headers for e in stack.sender.sent] == [(), ()]


class OneErased:
    """Tombstones in which a@example.com was erased."""

    def erased_at(self, address):
        return AT if address == "a@example.com" else None

    def add(self, address, *, now):
        raise AssertionError("the pipeline never erases")

    def name(self, address):
        return "erased:0123abcd"


def test_an_erased_recipients_kept_preference_is_read_under_its_tombstone_name(stack):
    """Erasure with "keep preferences" keys them by the tombstone's name: the pipeline, which
    journals an erased recipient by that name, reads the preference there too."""
    stack.pipeline.tombstones = OneErased()
    kept = replace(a_unsubscribed(), address="erased:0123abcd")
    preferences = DictPreferences(kept)
    stack.use(preferences=preferences)

    stack.process(TWO)

    assert [e.to for e in stack.sender.sent] == ["b@example.com"]
    assert ("erased:0123abcd", "dataset-activity") in preferences.reads
