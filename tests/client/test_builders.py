"""The generated builders produce exactly the contract's fixtures, and refuse incomplete requests."""

from __future__ import annotations

import json

import pytest

from emailops.client import Email, To, messages
from emailops.core.contract import parse_request
from tests.conftest import fixture_body


def fixture(name: str) -> dict:
    return json.loads(fixture_body(name))


def accepted() -> Email:
    return messages.dataset_publication_accepted(
        To("Alice", "alice@example.com"),
        dataset_name="My Dataset",
        reviewer_name="Bob",
        date="2026-06-18",
    )


def test_minimal_fixture():
    assert accepted().payload() == fixture("minimal.json")


def test_with_organization_fixture():
    assert accepted().with_organization(367).payload() == fixture("with-organization.json")


def test_with_dedupe_id_fixture():
    email = messages.added_to_team(
        To("Carol", "carol@example.com"),
        administrator="Dave",
        team_name="Imaging",
        host="app.pennsieve.io",
        organization_node_id="N:organization:abc",
    ).with_dedupe_id("team-invite-evt-12345")
    assert email.payload() == fixture("with-dedupe-id.json")


def test_multi_recipient_fixture():
    email = messages.dataset_proposal_submitted(
        [To("Reviewer One", "rev1@example.com"), To("Reviewer Two", "rev2@example.com")],
        author_name="Erin",
        author_email="erin@example.com",
        proposal_title="A Study",
        workspace_name="SPARC",
        workspace_node_id="N:organization:sparc",
        app_url="app.pennsieve.io",
    )
    assert email.payload() == fixture("multi-recipient.json")


def test_the_json_parses_as_the_consumer_parses_it():
    email = accepted().with_organization("367").with_subject("Accepted: {{ datasetName }}")
    request = parse_request(email.to_json())
    assert request.message_id == "dataset-publication-accepted"
    assert request.organization_id == "367"
    assert request.context["subject"] == "Accepted: {{ datasetName }}"
    assert [(r.name, r.email) for r in request.recipients] == [("Alice", "alice@example.com")]


def test_every_manifest_message_has_a_builder(tmp_path):
    from emailops.client.generate import load_manifest

    assert set(messages.BUILDERS) == set(load_manifest())


def test_a_missing_variable_is_a_type_error():
    with pytest.raises(TypeError, match="reviewer_name"):
        messages.dataset_publication_accepted(  # type: ignore[call-arg]
            To("Alice", "alice@example.com"), dataset_name="My Dataset", date="2026-06-18"
        )


def test_variables_are_keyword_only_and_strings():
    with pytest.raises(TypeError):
        messages.error_publishing(To("A", "a@example.com"), "My Dataset")  # type: ignore[misc]
    with pytest.raises(TypeError, match="'datasetName' must be a str, got None"):
        messages.error_publishing(To("A", "a@example.com"), dataset_name=None)  # type: ignore[arg-type]


def test_options_return_copies():
    base = accepted()
    branded = base.with_organization(367).with_dedupe_id("evt-1")
    assert "organizationId" not in base.context and not base.dedupe_id
    assert branded.context["organizationId"] == 367 and branded.dedupe_id == "evt-1"


@pytest.mark.parametrize(
    "make",
    [
        lambda: accepted().with_organization("O367"),
        lambda: accepted().with_organization(True),
        lambda: accepted().with_dedupe_id(""),
        lambda: accepted().with_subject("  "),
        lambda: messages.error_publishing(To("A", "not-an-address"), dataset_name="d"),
        lambda: messages.error_publishing([], dataset_name="d"),
        lambda: Email("", (To("A", "a@example.com"),)),
    ],
    ids=[
        "org-not-digits",
        "org-bool",
        "empty-dedupe",
        "blank-subject",
        "bad-address",
        "no-recipient",
        "no-message-id",
    ],
)
def test_invalid_requests_fail_at_the_call_site(make):
    with pytest.raises(ValueError):
        make()


def test_a_string_is_not_a_recipient_list():
    with pytest.raises(TypeError, match="To"):
        messages.error_publishing("a@example.com", dataset_name="d")  # type: ignore[arg-type]
