"""The producer client: build email requests with typed builders and put them on the queue.

    from emailops.client import EmailClient, To, messages

    client = EmailClient(boto3.client("sqs"), queue_url)
    client.send(messages.added_to_team(To("Carol", "carol@example.com"), administrator="Dave", ...))

Needs neither Django nor anything of the console: the request rules are the consumer's own
(``emailops.core.contract``) and the SQS client is the caller's.
"""

from __future__ import annotations

from emailops.client import messages
from emailops.client.request import Email, To
from emailops.client.sender import EmailClient, SendResult

__all__ = ["Email", "EmailClient", "SendResult", "To", "messages"]
