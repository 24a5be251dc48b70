"""The console's "held and log-only" page and the release of log-only rows (moto in-process):
listed by reason, released by a Support lead (audited), re-claimable by a conditional update and
sent through the normal pipeline with the same dedupe key, past the send guard once."""

from __future__ import annotations

import json

import pytest
from django.core.exceptions import PermissionDenied, ValidationError

from emailops import container
from emailops.core.contract import parse_request
from emailops.core.dedupe import dedupe_key
from emailops.core.pipeline import Action
from emailops.core.ports import Status, TemplateMapping
from emailops.core.retry import STATE_ATTRIBUTE
from emailops.queue_state import state_seal
from templates_admin.journal.release import logged_only_release
from templates_admin.models import EmailAction

PAGE = "/admin/templates_admin/emailjournalpage/held/"


def body(n: int) -> str:
    return json.dumps(
        {"messageId": "invite", "recipients": [{"email": f"p{n}@example.com"}], "context": {"n": n}}
    )


def key_of(n: int) -> str:
    return dedupe_key(parse_request(body(n)), f"p{n}@example.com")


@pytest.fixture
def guarded(aws, settings):
    settings.SEND_RATE_LIMIT_PER_MINUTE = 1
    settings.RATE_SAFEGUARD_OVER_CAP = "log-only"
    container.reset()
    adapters = container.current()
    adapters.mapping_store.save_mapping(
        TemplateMapping("invite", "invite.html", "Invitation"), expected_version=None
    )
    adapters.template_store.write_template("default/invite.html", "<p>Come, {{.n}}</p>")
    pipeline = adapters.build_pipeline(lease_seconds=30)
    assert pipeline.process(body(1)).sent == 1
    assert pipeline.process(body(2)).action is Action.DELETE  # over the cap: log-only
    return pipeline


def test_log_only_rows_are_listed_by_reason_and_released_by_a_support_lead(
    aws, guarded, client, make_user
):
    client.force_login(make_user("Support leads"))
    page = client.get(PAGE, {"reason": "rate-safeguard"}).content.decode()
    assert key_of(2) in page and "p***@example.com" in page  # masked, as the console masks
    assert "p2@example.com" not in page
    assert key_of(1) not in page  # sent, not log-only
    assert key_of(2) not in client.get(PAGE, {"reason": "loop"}).content.decode()

    response = client.post(
        PAGE + "?reason=rate-safeguard", {"key": [key_of(2)], "reason": "legitimate burst"}
    )
    assert response.status_code == 302
    action = EmailAction.objects.get()
    assert (action.kind, action.journal_key, action.reason) == (
        "release",
        key_of(2),
        "legitimate burst",
    )
    row = container.current().journal_reader.read(key_of(2))
    assert row.status == Status.FAILED and not row.logged_only  # claimable again

    [message] = aws.queue_messages(aws.queue_url)
    text = message["MessageAttributes"][STATE_ATTRIBUTE]["StringValue"]
    state = state_seal().open(text, message["Body"]).state  # sealed: the consumer honours it
    assert state.released == (key_of(2),)
    assert dedupe_key(parse_request(message["Body"]), "p2@example.com") == key_of(2)
    # Through the normal pipeline: the cap is still spent this minute, the release goes past it.
    outcome = guarded.process(message["Body"], state=state)
    assert (outcome.action, outcome.sent) == (Action.DELETE, 1)
    assert container.current().journal_reader.read(key_of(2)).status == Status.SENT
    assert len(aws.sent_emails()) == 2
    # Without the release the same request is kept back again.
    assert guarded.process(body(3)).sent == 0


def test_a_release_is_refused_without_permission_reason_or_a_releasable_row(
    aws, guarded, make_user
):
    lead, support = make_user("Support leads"), make_user("Support")
    with pytest.raises(PermissionDenied):
        logged_only_release(adapters=container.current(), key=key_of(2), reason="x", user=support)
    with pytest.raises(ValidationError, match="why"):
        logged_only_release(adapters=container.current(), key=key_of(2), reason=" ", user=lead)
    with pytest.raises(ValidationError, match="only a row made log-only"):
        logged_only_release(
            adapters=container.current(), key=key_of(1), reason="x", user=lead
        )  # it was sent
    logged_only_release(adapters=container.current(), key=key_of(2), reason="x", user=lead)
    with pytest.raises(ValidationError):
        logged_only_release(adapters=container.current(), key=key_of(2), reason="again", user=lead)
    assert EmailAction.objects.count() == 1


def test_support_sees_the_list_without_release_and_held_requests_are_listed(
    aws, guarded, client, make_user, settings
):
    client.force_login(make_user("Support"))
    page = client.get(PAGE).content.decode()
    assert key_of(2) not in page or 'name="key"' not in page
    assert "journal-release-submit" not in page
    assert client.post(PAGE, {"key": [key_of(2)], "reason": "x"}).status_code == 403

    settings.RATE_SAFEGUARD_OVER_CAP = "hold"
    container.reset()
    held = container.current().build_pipeline(lease_seconds=30)
    assert held.process(body(4)).action is Action.WAIT
    page = client.get(PAGE).content.decode()
    assert 'id="journal-held"' in page and "invite" in page and "over 1 per minute" in page
    held_row = page[page.index('class="journal-held-row"') :].split("</tr>")[0]
    assert "p***@example.com" in held_row and "<time" in held_row  # who, since when
