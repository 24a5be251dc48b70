"""Put email requests on the email service's SQS queue.

The SQS client is injected (``boto3.client("sqs")`` or any object with the same two methods), so this
module imports no AWS library at all: it recognises botocore's errors by their class names, so
only ``emailops/aws/`` imports boto3/botocore (tests/test_architecture.py).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from emailops.client.request import Email
from emailops.core.contract import EmailRequest, parse_request, request_to_json

__all__ = ["EmailClient", "SendResult"]

BATCH_ENTRIES = 10  # SendMessageBatch's limit
# SQS caps a batch's total payload like a single message's; the smallest cap any queue may have.
BATCH_BYTES = 256 * 1024


@dataclass(frozen=True)
class SendResult:
    """One request's outcome in ``send_many``: the SQS message id, or why it was not queued."""

    index: int  # position in the list given to send_many
    message_id: str | None = None  # SQS MessageId when queued
    error: str | None = None
    code: str | None = None  # SQS's error code, or "InvalidRequest" when refused before sending
    sender_fault: bool = True  # False: SQS's trouble, the same request may succeed later

    @property
    def ok(self) -> bool:
        return self.message_id is not None


def _body(request: Email | EmailRequest | str) -> tuple[str, int]:
    """The validated JSON body and SQS delay of a request; raises ValueError when invalid."""
    if isinstance(request, Email):
        return request.to_json(), request.delay_seconds
    if isinstance(request, EmailRequest):
        body = request_to_json(request)
        parse_request(body)  # a hand-built EmailRequest skipped the parser's checks
        return body, 0
    if isinstance(request, str):
        parse_request(request)  # InvalidRequest is a ValueError
        return request, 0
    raise TypeError(f"expected an Email, an EmailRequest or a JSON string, got {type(request)}")


def _entry(body: str, delay: int) -> dict[str, Any]:
    # DelaySeconds only when asked for: FIFO queues refuse the parameter altogether.
    return {"MessageBody": body, "DelaySeconds": delay} if delay else {"MessageBody": body}


def _chunks(entries: list[dict[str, Any]]) -> Iterator[list[dict[str, Any]]]:
    chunk: list[dict[str, Any]] = []
    size = 0
    for entry in entries:
        length = len(entry["MessageBody"].encode())
        if chunk and (len(chunk) == BATCH_ENTRIES or size + length > BATCH_BYTES):
            yield chunk
            chunk, size = [], 0
        chunk.append(entry)
        size += length
    if chunk:
        yield chunk


class EmailClient:
    """``EmailClient(boto3.client("sqs"), queue_url).send(messages.added_to_team(...))``."""

    def __init__(self, sqs_client: Any, queue_url: str) -> None:
        if not queue_url:
            raise ValueError("queue_url is required (the email service's EMAIL_SERVICE_QUEUE_URL)")
        self.sqs = sqs_client
        self.queue_url = queue_url

    def send(self, request: Email | EmailRequest | str) -> str:
        """Validate and queue one request; returns the SQS message id. AWS errors propagate."""
        body, delay = _body(request)
        response = self.sqs.send_message(QueueUrl=self.queue_url, **_entry(body, delay))
        return response["MessageId"]

    def send_many(self, requests: Iterable[Email | EmailRequest | str]) -> list[SendResult]:
        """Queue many requests with SendMessageBatch (10 a call); one result per request, in order.

        Never raises for a single request: an invalid one is refused before sending and an
        entry SQS rejects (or a call that fails as a whole) is reported on its results.
        """
        results: dict[int, SendResult] = {}
        entries: list[dict[str, Any]] = []
        for index, request in enumerate(requests):
            try:
                body, delay = _body(request)
            except (ValueError, TypeError) as exc:
                results[index] = SendResult(index, error=str(exc), code="InvalidRequest")
                continue
            entries.append({"Id": str(index), **_entry(body, delay)})
        for chunk in _chunks(entries):
            for result in self._send_batch(chunk):
                results[result.index] = result
        return [results[index] for index in sorted(results)]

    def _send_batch(self, chunk: Sequence[dict[str, Any]]) -> list[SendResult]:
        try:
            response = self.sqs.send_message_batch(QueueUrl=self.queue_url, Entries=list(chunk))
        except Exception as exc:
            kind = _aws_error_kind(exc)
            if kind is None:
                raise
            if kind == "ClientError":
                answer: dict[str, Any] = getattr(exc, "response", {})
                error = answer.get("Error", {})
                status = answer.get("ResponseMetadata", {}).get("HTTPStatusCode", 400)
                return [
                    SendResult(
                        int(e["Id"]),
                        error=error.get("Message") or str(exc),
                        code=error.get("Code"),
                        sender_fault=status < 500,
                    )
                    for e in chunk
                ]
            # network trouble, timeouts: worth trying again
            return [SendResult(int(e["Id"]), error=str(exc), sender_fault=False) for e in chunk]
        sent = [SendResult(int(s["Id"]), message_id=s["MessageId"]) for s in response["Successful"]]
        failed = [
            SendResult(
                int(f["Id"]),
                error=f.get("Message") or f["Code"],
                code=f["Code"],
                sender_fault=f["SenderFault"],
            )
            for f in response.get("Failed", [])
        ]
        return sent + failed


def _aws_error_kind(exc: BaseException) -> str | None:
    """ "ClientError" (AWS answered with an error), "BotoCoreError" (no answer: network, timeout)
    or None (not botocore's), told by the exception's classes without importing botocore."""
    for cls in type(exc).__mro__:
        if cls.__module__ == "botocore.exceptions" and cls.__name__ in (
            "ClientError",
            "BotoCoreError",
        ):
            return cls.__name__
    return None
