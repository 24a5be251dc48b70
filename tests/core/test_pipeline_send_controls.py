"""The Go service's send controls: SEND_ENABLED=false and a template's SendDisabled journal the
whole request log-only (SENT + LoggedOnly, with why) and call SES zero times; a suppressed address
holds back only its own recipient."""

from __future__ import annotations

from dataclasses import replace

from emailops.core.pipeline import Action
from tests.core.test_pipeline import Stack, request_body

TWO = request_body(
    recipients=[{"name": "", "email": "a@example.com"}, {"name": "", "email": "b@example.com"}],
    datasetName="D",
)


def assert_logged_only(stack: Stack, reason: str) -> None:
    for address in ("a@example.com", "b@example.com"):
        row = stack.row(TWO, address)
        assert row["Status"] == "SENT" and row["LoggedOnly"] is True
        assert row["LoggedOnlyReason"] == reason and "SesMessageId" not in row
    assert stack.sender.sent == []


def test_send_enabled_false_journals_every_recipient_log_only_and_sends_nothing():
    stack = Stack()
    stack.use(send_enabled=False)

    outcome = stack.process(TWO)

    assert outcome.action is Action.DELETE
    assert_logged_only(stack, "service-stop")


def test_a_template_with_send_disabled_is_journaled_log_only_and_sends_nothing():
    stack = Stack()
    mapping = stack.mappings.rows["dataset-publication-accepted"]
    stack.mappings.rows[mapping.message_id] = replace(mapping, send_disabled=True)

    assert stack.process(TWO).action is Action.DELETE
    assert_logged_only(stack, "template-off")


def test_one_suppressed_address_holds_back_only_its_own_recipient():
    stack = Stack()

    class Suppressed:
        def suppression_reason(self, address):
            return "hard bounce" if address == "a@example.com" else None

    stack.use(suppressions=Suppressed())
    outcome = stack.process(TWO)

    assert outcome.sent == 1 and len(stack.sender.sent) == 1
    assert stack.row(TWO, "b@example.com")["Status"] == "SENT"
