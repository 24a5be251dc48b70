"""Rows in plain words: status explanations, masking, branding, failure kinds."""

from __future__ import annotations

import pytest

from emailops import container
from emailops.aws.journal_codec import row_from_item as typed
from templates_admin.journal.delivery import bounce_reason, delivery_outcome, timeline
from templates_admin.journal.presentation import (
    MASK,
    branding,
    excerpt,
    explain_status,
    mask_context,
    summarize,
)
from tests.journal_factory import BASE_TIME, journal_row

NOW = BASE_TIME + 1000


@pytest.mark.parametrize(
    "template_key, expected",
    [
        ("default/added-to-team.html", "default"),
        ("custom/O367/dataset-publication-accepted.html", "org 367"),
        ("", ""),
        (None, ""),
    ],
)
def test_branding_names_the_template_family(template_key, expected):
    assert branding(template_key) == expected


def test_masking_matches_key_substrings_in_any_case_at_any_depth(settings):
    settings.JOURNAL_SENSITIVE_KEYS = ["token", "password"]
    context = {
        "inviteToken": "t1",
        "user": {"Password": "p1", "name": "Ann"},
        "items": [{"apiTOKEN": "t2", "title": "x"}],
        "teamName": "Curators",
    }

    assert mask_context(context, container.current().config.console.sensitive_keys) == {
        "inviteToken": MASK,
        "user": {"Password": MASK, "name": "Ann"},
        "items": [{"apiTOKEN": MASK, "title": "x"}],
        "teamName": "Curators",
    }
    assert context["inviteToken"] == "t1"  # a copy


def test_default_sensitive_keys_cover_links_and_keys():
    masked = mask_context(
        {"setupAccountLink": "https://x/?t=1", "apiKey": "k", "host": "h"},
        container.current().config.console.sensitive_keys,
    )
    assert masked == {"setupAccountLink": MASK, "apiKey": MASK, "host": "h"}


@pytest.mark.parametrize(
    "facts, headline",
    [
        ({"ErrorKind": "TemplateError", "Permanent": True}, "Failed permanently: "),
        ({"ErrorKind": "SendThrottled", "Permanent": False}, "Failed for now, will be retried: "),
        ({}, "Failed: "),  # a Go row, or one written before the facts were recorded
    ],
)
def test_failure_kind_is_read_from_the_row_not_from_its_text(facts, headline):
    # The same text as the old string matching called permanent: only the row's facts decide.
    error = "render template [default/a.html]: 'dict object' has no attribute"
    row = journal_row("a@b.org", at=BASE_TIME, status="FAILED", Error=error, **facts)
    explanation = explain_status(typed(row), now=NOW, lease=container.current().lease_policy)
    assert explanation.headline == headline + error


def test_sent_without_a_delivery_report_says_so():
    row = journal_row("a@b.org", at=BASE_TIME)
    explanation = explain_status(typed(row), now=NOW, lease=container.current().lease_policy)
    assert explanation.headline == (
        "Accepted by SES at 2026-05-28 20:26:41 UTC; no delivery report yet."
    )
    assert explanation.tone == "pending"
    assert any("within minutes" in line for line in explanation.details)


def test_queued_in_progress_then_stuck():
    row = journal_row("a@b.org", at=BASE_TIME, status="QUEUED")
    lease = row["ClaimExpiresAt"]

    live = explain_status(typed(row), now=lease - 1, lease=container.current().lease_policy)
    stuck = explain_status(typed(row), now=lease + 1, lease=container.current().lease_policy)

    assert live.headline.startswith("In progress") and live.tone == "pending"
    assert stuck.headline.startswith("Stuck since 2026-05-28 20:27:10")
    assert any("retried" in line for line in stuck.details)
    assert (
        summarize(typed(row), now=lease + 1, lease=container.current().lease_policy).stuck
        and not summarize(typed(row), now=lease, lease=container.current().lease_policy).stuck
    )


def test_failed_transient_will_be_retried():
    row = journal_row(
        "a@b.org",
        at=BASE_TIME,
        status="FAILED",
        Error="send email [a]: Throttling",
        Permanent=False,
    )
    explanation = explain_status(typed(row), now=NOW, lease=container.current().lease_policy)
    assert explanation.headline.startswith("Failed for now, will be retried")
    assert "dead-letter queue" in explanation.details[0]


def test_failed_go_row_says_it_cannot_tell():
    row = journal_row("a@b.org", at=BASE_TIME, status="FAILED", go_row=True, Error="boom")
    explanation = explain_status(typed(row), now=NOW, lease=container.current().lease_policy)
    assert explanation.headline == "Failed: boom"
    assert "does not say whether" in explanation.details[0]


def test_excerpt_keeps_one_line_and_marks_the_cut():
    assert excerpt("a\n b  c") == "a b c"
    assert excerpt("x" * 200, 10) == "x" * 9 + "…"


@pytest.mark.parametrize(
    "bounce_type, sub_type, diagnostic, words",
    [
        ("Permanent", "General", "smtp; 550 5.1.1 <x@y.org>: user unknown", "mailbox does not exist"),
        ("Permanent", "General", "550 Requested action not taken: mailbox unavailable",
         "mailbox does not exist"),
        ("Permanent", "General", "550 5.1.2 Host not found", "the address's domain does not receive email"),
        ("Permanent", "General", "554 5.7.1 Message rejected as spam",
         "refused by the recipient's server (policy or spam filter)"),
        ("Permanent", "General", None, "the recipient's server refused it for good"),
        ("Permanent", "NoEmail", None, "address does not exist"),
        ("Permanent", "Suppressed", "Amazon SES has suppressed sending", "on SES's suppression list"),
        ("Permanent", "OnAccountSuppressionList", None, "on SES's suppression list (this account's)"),
        ("Transient", "MailboxFull", "452 4.2.2 Over quota", "mailbox full (temporary)"),
        ("Transient", "General", None, "temporary delivery problem"),
        ("Transient", "General", "452 4.2.2 mailbox full", "mailbox full (temporary)"),
        ("Undetermined", "Undetermined", None, "SES could not tell why (undetermined bounce)"),
    ],
)  # fmt: skip
def test_bounce_reasons_in_plain_words(bounce_type, sub_type, diagnostic, words):
    assert bounce_reason(bounce_type, sub_type, diagnostic) == words


@pytest.mark.parametrize(
    "extra, state, tone, text",
    [
        ({"DeliveryStatus": "DELIVERED"}, "delivered", "ok", "delivered"),
        ({"DeliveryStatus": "BOUNCED", "BounceType": "Permanent", "BounceSubType": "NoEmail"},
         "bounced", "error", "bounced: address does not exist"),
        ({"DeliveryStatus": "BOUNCED", "BounceType": "Transient", "BounceSubType": "MailboxFull"},
         "bounced", "warning", "bounced: mailbox full (temporary)"),
        ({"DeliveryStatus": "COMPLAINED"}, "complained", "error",
         "complained: the recipient marked it as spam"),
        ({"DeliveryStatus": "DELAYED"}, "delayed", "pending", "delayed: SES is still trying"),
        ({"DeliveryStatus": "REJECTED"}, "rejected", "error", "rejected by SES: not sent (virus)"),
        ({}, "no-report", "pending", "accepted by SES, no delivery report yet"),
        ({"Status": "SUPPRESSED", "Error": "hard bounce: Permanent/General: 550 5.1.1"},
         "suppressed", "warning", "suppressed: never sent (hard bounce: Permanent/General: 550 5.1.1)"),
    ],
)  # fmt: skip
def test_delivery_outcome_of_each_kind_of_row(extra, state, tone, text):
    row = journal_row("a@b.org", at=BASE_TIME) | {"DeliveryStatusAt": "2026-05-28T20:30:00Z"}
    outcome = delivery_outcome(typed(row | extra))
    assert (outcome.state, outcome.tone, outcome.text) == (state, tone, text)


def test_queued_and_failed_rows_have_no_delivery_outcome_yet():
    assert delivery_outcome(typed(journal_row("a@b.org", at=BASE_TIME, status="QUEUED"))) is None
    assert delivery_outcome(typed(journal_row("a@b.org", at=BASE_TIME, status="FAILED"))) is None


def test_a_permanent_bounce_is_explained_with_the_servers_words():
    row = journal_row(
        "a@b.org",
        at=BASE_TIME,
        DeliveryStatus="BOUNCED",
        DeliveryStatusAt="2026-05-28T20:30:00.000Z",
        BounceType="Permanent",
        BounceSubType="General",
        DiagnosticCode="smtp; 550 5.1.1 user unknown",
    )
    explanation = explain_status(typed(row), now=NOW, lease=container.current().lease_policy)
    assert explanation.tone == "error"
    assert explanation.headline == "Bounced: mailbox does not exist."
    assert explanation.details[0].startswith("Reported by SES at 2026-05-28 20:30:00 UTC")
    assert "Bounce type: Permanent/General." in explanation.details
    assert "Their mail server said: smtp; 550 5.1.1 user unknown" in explanation.details
    assert any("suppression list" in line for line in explanation.details)


def test_a_suppressed_row_says_it_was_never_sent_and_why():
    row = journal_row("a@b.org", at=BASE_TIME, status="SUPPRESSED", Error="complaint: abuse")
    explanation = explain_status(typed(row), now=NOW, lease=container.current().lease_policy)
    assert explanation.headline == "Not sent: a@b.org is on the suppression list."
    assert "complaint: abuse" in explanation.details[0]


def test_timeline_reads_delivery_events_oldest_first_and_skips_junk():
    row = journal_row(
        "a@b.org",
        at=BASE_TIME,
        DeliveryEvents=[
            {"Type": "Send", "At": "2026-05-28T20:26:41.000Z", "Id": "e1", "Summary": "sent"},
            "not a map",
            {"Type": "Delivery", "At": "2026-05-28T20:26:43.500Z", "Id": "e2", "Summary": "ok"},
        ],
    )
    events = timeline(typed(row))
    assert [(e.type, e.at, e.id) for e in events] == [
        ("Send", "2026-05-28 20:26:41 UTC", "e1"),
        ("Delivery", "2026-05-28 20:26:43 UTC", "e2"),
    ]
