"""enqueue_email, the operator's tool: it refuses what the consumer would only partly send."""

from __future__ import annotations

import pytest
from django.core.management import CommandError, call_command


def test_a_bad_recipient_or_organization_is_refused_unless_raw(aws):
    args = ["enqueue_email", "--message-id", "m", "--to", "a@example.com", "--to", "bob"]
    with pytest.raises(CommandError, match=r"recipients\[1\]\.email 'bob'.*--raw"):
        call_command(*args)
    context = '{"organizationId": "O1"}'
    with pytest.raises(CommandError, match="organizationId 'O1' is not a number"):
        call_command("enqueue_email", "--message-id", "m", "--to", "a@x.test", "--context", context)
    assert aws.queue_messages(aws.queue_url) == []

    call_command(*args, "--raw")
    assert len(aws.queue_messages(aws.queue_url)) == 1


def test_an_unknown_message_id_is_enqueued_with_a_warning(aws, capsys):
    aws.load_samples()
    call_command("enqueue_email", "--message-id", "no-such-message", "--to", "a@example.com")

    err = capsys.readouterr().err
    assert "warning: no template mapping has messageId 'no-such-message'" in err
    assert "the consumer will fail this request" in err
    assert len(aws.queue_messages(aws.queue_url)) == 1


def test_a_mapped_message_id_gets_no_warning(aws, capsys):
    aws.load_samples()
    context = '{"teamName": "Imaging", "administrator": "Dave"}'
    call_command(
        "enqueue_email", "--message-id", "added-to-team", "--to", "a@example.com",
        "--context", context,
    )  # fmt: skip

    assert "warning" not in capsys.readouterr().err
