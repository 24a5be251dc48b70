"""Rows in plain words: status explanations, masking, branding, failure kinds."""

from __future__ import annotations

import pytest

from emailops.aws.journal_search import failure_is_permanent
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

    assert mask_context(context) == {
        "inviteToken": MASK,
        "user": {"Password": MASK, "name": "Ann"},
        "items": [{"apiTOKEN": MASK, "title": "x"}],
        "teamName": "Curators",
    }
    assert context["inviteToken"] == "t1"  # a copy


def test_default_sensitive_keys_cover_links_and_keys():
    masked = mask_context({"setupAccountLink": "https://x/?t=1", "apiKey": "k", "host": "h"})
    assert masked == {"setupAccountLink": MASK, "apiKey": MASK, "host": "h"}


@pytest.mark.parametrize(
    "error, permanent",
    [
        ("look up template mapping [x]: no such messageId in the templates table", True),
        ("parse request [x]: context.organizationId must be an integer", True),
        ("render template [default/a.html]: 'dict object' has no attribute", True),
        ("send email [a@b.org]: MessageRejected: Email address is not verified.", True),
        ("send email [a@b.org]: Throttling: Maximum sending rate exceeded.", False),
        ("send email [Ann <a@b.org>]: ServiceUnavailable", False),
        ("failed to send: InvalidParameterValue", None),  # the Go consumer's words
    ],
)
def test_failure_kind_is_read_from_the_error(error, permanent):
    assert failure_is_permanent(error) is permanent


def test_sent_without_a_delivery_report_says_so():
    row = journal_row("a@b.org", at=BASE_TIME)
    explanation = explain_status(row, now=NOW, lease_ends_at=None)
    assert explanation.headline == (
        "Accepted by SES at 2026-05-28 20:26:41 UTC; no delivery report yet."
    )
    assert explanation.tone == "pending"
    assert any("within minutes" in line for line in explanation.details)


def test_queued_in_progress_then_stuck():
    row = journal_row("a@b.org", at=BASE_TIME, status="QUEUED")
    lease = row["ClaimExpiresAt"]

    live = explain_status(row, now=lease - 1, lease_ends_at=lease)
    stuck = explain_status(row, now=lease + 1, lease_ends_at=lease)

    assert live.headline.startswith("In progress") and live.tone == "pending"
    assert stuck.headline.startswith("Stuck since 2026-05-28 20:27:10")
    assert any("retried" in line for line in stuck.details)
    assert summarize(row, now=lease + 1).stuck and not summarize(row, now=lease).stuck


def test_failed_transient_will_be_retried():
    row = journal_row("a@b.org", at=BASE_TIME, status="FAILED", Error="send email [a]: Throttling")
    explanation = explain_status(row, now=NOW, lease_ends_at=None)
    assert explanation.headline.startswith("Failed for now, will be retried")
    assert "dead-letter queue" in explanation.details[0]


def test_failed_go_row_says_it_cannot_tell():
    row = journal_row("a@b.org", at=BASE_TIME, status="FAILED", go_row=True, Error="boom")
    explanation = explain_status(row, now=NOW, lease_ends_at=None)
    assert explanation.headline == "Failed: boom"
    assert "does not say whether" in explanation.details[0]


def test_excerpt_keeps_one_line_and_marks_the_cut():
    assert excerpt("a\n b  c") == "a b c"
    assert excerpt("x" * 200, 10) == "x" * 9 + "…"
