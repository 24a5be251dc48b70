"""The request queue (``EMAIL_SERVICE_QUEUE_URL``) and its dead-letter queue."""

from __future__ import annotations

import json
import math
import time
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from emailops.aws import sqs_messages
from emailops.aws.clients import translate_error
from emailops.aws.sqs_messages import (
    FAILURE_REASON_ATTRIBUTE,
    OVERFLOW_ATTRIBUTE,
    OriginalKept,
    QueueDepth,
    QueueInfo,
    QueueMessage,
    message_bytes,
    packed_attribute,
    producer_attributes,
)
from emailops.aws.sqs_messages import (
    forwardable_attributes as forwardable_attributes,  # re-exported
)
from emailops.core.errors import PermanentError, TransientError

__all__ = ["SqsQueue", *sqs_messages.__all__]  # the message types are at home there

MAX_VISIBILITY_SECONDS = 43_200  # SQS's ceiling (12 hours)
MAX_DELAY_SECONDS = 900  # SQS's ceiling for DelaySeconds (15 minutes)
_MOVE_PAUSES = (0.5, 1.0, 2.0, None)  # between attempts of a copy or delete (botocore retries too)
_MAX_ATTRIBUTES = 10  # SQS's limit per message
DEFAULT_MAX_MESSAGE_BYTES = 262_144  # until describe() reads the queue's MaximumMessageSize


class SqsQueue:
    def __init__(
        self, client: Any, url: str, *, max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES
    ) -> None:
        self.client = client
        self.url = url
        self.max_message_bytes = max_message_bytes

    def _call(self, operation: str, what: str, key: str | None = None, **kwargs: Any) -> Any:
        try:
            return getattr(self.client, operation)(**kwargs)
        except (ClientError, BotoCoreError) as exc:
            raise translate_error(exc, what, key=key or self.url) from exc

    def describe(self) -> QueueInfo:
        attrs = self._call(
            "get_queue_attributes",
            "read queue attributes",
            QueueUrl=self.url,
            AttributeNames=["VisibilityTimeout", "RedrivePolicy", "MaximumMessageSize"],
        )["Attributes"]
        self.max_message_bytes = int(attrs.get("MaximumMessageSize") or self.max_message_bytes)
        policy = json.loads(attrs.get("RedrivePolicy") or "{}")
        dead_letter_url = None
        if arn := policy.get("deadLetterTargetArn"):
            *_, account, name = arn.split(":")
            dead_letter_url = self._call(
                "get_queue_url",
                "find dead-letter queue",
                key=arn,
                QueueName=name,
                QueueOwnerAWSAccountId=account,
            )["QueueUrl"]
        max_receives = policy.get("maxReceiveCount")
        return QueueInfo(
            visibility_timeout=int(attrs.get("VisibilityTimeout", 30)),
            dead_letter_url=dead_letter_url,
            max_receive_count=int(max_receives) if max_receives else None,
        )

    def receive(self, *, max_messages: int = 10, wait_seconds: int = 20) -> list[QueueMessage]:
        return self._receive(MaxNumberOfMessages=max_messages, WaitTimeSeconds=wait_seconds)

    def _receive(self, **kwargs: Any) -> list[QueueMessage]:
        response = self._call(
            "receive_message",
            "receive messages",
            QueueUrl=self.url,
            MessageSystemAttributeNames=["ApproximateReceiveCount", "SentTimestamp"],
            MessageAttributeNames=["All"],
            **kwargs,
        )
        return [
            QueueMessage(
                message_id=m["MessageId"],
                receipt_handle=m["ReceiptHandle"],
                body=m.get("Body", ""),
                receive_count=int(m.get("Attributes", {}).get("ApproximateReceiveCount", 1)),
                attributes=m.get("MessageAttributes", {}),
                sent_at=int(m.get("Attributes", {}).get("SentTimestamp", 0)) // 1000,
            )
            for m in response.get("Messages", [])
        ]

    def _batch(
        self, operation: str, what: str, messages: list[QueueMessage], **entry: Any
    ) -> list[str]:
        """One batch call per 10 messages; returns the ids SQS refused."""
        failed: list[str] = []
        for start in range(0, len(messages), 10):
            chunk = messages[start : start + 10]
            response = self._call(
                operation,
                what,
                QueueUrl=self.url,
                Entries=[
                    {"Id": str(i), "ReceiptHandle": m.receipt_handle, **entry}
                    for i, m in enumerate(chunk)
                ],
            )
            failed += [chunk[int(f["Id"])].message_id for f in response.get("Failed", [])]
        return failed

    def delete_batch(self, messages: list[QueueMessage]) -> list[str]:
        """Delete up to 10 at a time; returns the ids SQS failed to delete (they will reappear)."""
        return self._batch("delete_message_batch", "delete messages", messages)

    def change_visibility(self, message: QueueMessage, seconds: int) -> None:
        visibility = max(0, min(MAX_VISIBILITY_SECONDS, seconds))
        self._on_message(
            "change_message_visibility",
            "change message visibility",
            message,
            VisibilityTimeout=visibility,
        )

    def _on_message(self, operation: str, what: str, message: QueueMessage, **kwargs: Any) -> Any:
        """One call about one received message (its receipt handle)."""
        return self._call(
            operation,
            what,
            key=message.message_id,
            QueueUrl=self.url,
            ReceiptHandle=message.receipt_handle,
            **kwargs,
        )

    def _carried_attributes(
        self, message: QueueMessage, extra: dict[str, str]
    ) -> dict[str, dict[str, Any]]:
        """The message's attributes for a copy (see _attributes_for). Raises PermanentError when
        the copy would exceed the queue's MaximumMessageSize (SQS would refuse it as
        InvalidParameterValue)."""
        kept = self._attributes_for(message, extra)
        size = message_bytes(message.body, kept)
        if size > self.max_message_bytes:
            raise PermanentError(
                "copy message",
                key=message.message_id,
                reason=f"the copy with its state would be {size} bytes, over the queue's "
                f"MaximumMessageSize of {self.max_message_bytes}",
            )
        return kept

    def _attributes_for(
        self, message: QueueMessage, extra: dict[str, str]
    ) -> dict[str, dict[str, Any]]:
        """The message's attributes for a copy, ours replaced by ``extra`` (string attributes),
        within SQS's limit of ten: producer attributes that do not fit travel inside
        ``OVERFLOW_ATTRIBUTE``."""
        producer = producer_attributes(message.attributes, drop=(FAILURE_REASON_ATTRIBUTE, *extra))
        room = _MAX_ATTRIBUTES - len(extra)
        names = list(producer)
        if len(names) > room:
            kept = {name: producer[name] for name in names[: room - 1]}
            overflow = {name: packed_attribute(producer[name]) for name in names[room - 1 :]}
            kept[OVERFLOW_ATTRIBUTE] = {
                "DataType": "String",
                "StringValue": json.dumps(overflow, separators=(",", ":")),
            }
        else:
            kept = dict(producer)
        for name, value in extra.items():
            kept[name] = {"DataType": "String", "StringValue": value}
        return kept

    def _move(
        self, message: QueueMessage, target_url: str, extra: dict[str, str], what: str, **kwargs
    ) -> None:
        """Send a copy, then delete the original. In that order: a crash between the two leaves
        a duplicate (the journal's claim makes it harmless), never a loss. Each step rides out a
        short SQS outage: giving up would cost the record a receive, and SQS dead-letters a
        record that runs out of receives without a reason. If the delete still fails, the
        original is hidden for 12 hours and OriginalKept raised (see there)."""
        self._patiently(
            "send_message",
            what,
            key=message.message_id,
            QueueUrl=target_url,
            MessageBody=message.body,
            MessageAttributes=self._carried_attributes(message, extra),
            **kwargs,
        )
        try:
            self._patiently(
                "delete_message",
                f"delete original after: {what}",
                key=message.message_id,
                QueueUrl=self.url,
                ReceiptHandle=message.receipt_handle,
            )
        except TransientError as exc:
            hidden = self._hide_for_good([message]) == []
            raise OriginalKept(
                what,
                key=message.message_id,
                reason=f"the copy was sent but the original was not deleted ({exc.reason}); "
                + ("it is hidden for 12 hours" if hidden else "it could not be hidden either"),
            ) from exc

    def _hide_for_good(self, messages: list[QueueMessage]) -> list[str]:
        """Hide originals whose copy was sent as long as SQS allows (12 hours counted from the
        receive, less a minute for clocks); returns the ids refused."""
        refused: list[str] = []
        for message in messages:  # each has its own share of the ceiling left
            left = MAX_VISIBILITY_SECONDS - 60 - math.ceil(time.monotonic() - message.received_at)
            try:
                refused += self._batch(
                    "change_message_visibility_batch",
                    "hide original after its copy",
                    [message],
                    VisibilityTimeout=max(0, left),
                )
            except TransientError:
                refused.append(message.message_id)
        return refused

    def _patiently(self, operation: str, what: str, **kwargs: Any) -> Any:
        for pause in _MOVE_PAUSES:
            try:
                return self._call(operation, what, **kwargs)
            except TransientError:
                if pause is None:
                    raise
                time.sleep(pause)

    def dead_letter(
        self,
        message: QueueMessage,
        dead_letter_url: str,
        reason: str,
        carried: dict[str, str] | None = None,
    ) -> None:
        """Move the message to the DLQ with the reason attached (and what it carries)."""
        extra = dict(carried or {}) | {FAILURE_REASON_ATTRIBUTE: reason[:4000]}
        try:
            self._carried_attributes(message, extra)
        except PermanentError:
            # Too large with what it carries: the reason matters most in the dead-letter queue,
            # so it goes alone, cut to the room left; with no room at all, the copy goes as the
            # producer sent it (the caller has logged the reason).
            bare = self._attributes_for(message, {FAILURE_REASON_ATTRIBUTE: ""})
            room = self.max_message_bytes - message_bytes(message.body, bare)
            extra = (
                {FAILURE_REASON_ATTRIBUTE: reason.encode()[:room].decode(errors="ignore")}
                if room > 0
                else {}
            )
        self._move(message, dead_letter_url, extra, "move message to the dead-letter queue")

    def requeue(
        self, message: QueueMessage, *, delay_seconds: int, carried: dict[str, str]
    ) -> None:
        """Put a fresh copy back on this queue after ``delay_seconds`` (at most SQS's 15
        minutes), carrying ``carried``; the copy starts again at receive count 1."""
        self._move(
            message,
            self.url,
            carried,
            "re-enqueue message for retry",
            DelaySeconds=max(0, min(MAX_DELAY_SECONDS, delay_seconds)),
        )

    def requeue_now(self, items: list[tuple[QueueMessage, dict[str, str]]]) -> list[str]:
        """Fresh copies of up to ten messages at once (one call), carrying each its ``carried``,
        then the originals deleted (one call); returns the ids not copied. An original whose
        copy went out but which could not be deleted is hidden for 12 hours (see OriginalKept)."""
        entries, unsent = [], set()
        for i, (message, carried) in enumerate(items):
            try:
                attributes = self._carried_attributes(message, carried)
            except PermanentError:
                unsent.add(i)  # too large for a batch entry: the caller copies it on its own
                continue
            entries.append(
                {"Id": str(i), "MessageBody": message.body, "MessageAttributes": attributes}
            )
        if entries:
            response = self._patiently(
                "send_message_batch", "re-enqueue messages", QueueUrl=self.url, Entries=entries
            )
            unsent |= {int(f["Id"]) for f in response.get("Failed", [])}
        sent = [message for i, (message, _) in enumerate(items) if i not in unsent]
        try:
            not_deleted = set(self._batch("delete_message_batch", "delete originals", sent))
        except TransientError:
            not_deleted = {m.message_id for m in sent}
        if not_deleted:
            self._hide_for_good([m for m in sent if m.message_id in not_deleted])
        return [items[i][0].message_id for i in sorted(unsent)]

    def send(self, body: str, *, attributes: dict[str, str] | None = None) -> str:
        """Put one request on the queue (enqueue_email, send-test, resend, a release from
        log-only with its ``EmailOpsState``); returns its id."""
        extra = {}
        if attributes:
            extra["MessageAttributes"] = {
                name: {"DataType": "String", "StringValue": value}
                for name, value in attributes.items()
            }
        return self._call(
            "send_message", "enqueue request", QueueUrl=self.url, MessageBody=body, **extra
        )["MessageId"]

    # --- Operations on a queue as a whole (the console's dead-letter page, redrive, alerts) -------

    def depth(self) -> QueueDepth:
        """Approximate counts, as SQS reports them (eventually consistent, a few seconds behind)."""
        attrs = self._call(
            "get_queue_attributes",
            "read queue depth",
            QueueUrl=self.url,
            AttributeNames=["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"],
        )["Attributes"]
        return QueueDepth(
            visible=int(attrs.get("ApproximateNumberOfMessages", 0)),
            in_flight=int(attrs.get("ApproximateNumberOfMessagesNotVisible", 0)),
        )

    def receive_hidden(
        self, *, max_messages: int = 10, hide_seconds: int = 30
    ) -> list[QueueMessage]:
        """Receive without waiting, hiding what was received for ``hide_seconds`` (at least 1);
        callers release (visibility 0) or delete each message."""
        return self._receive(
            MaxNumberOfMessages=max(1, min(10, max_messages)),
            WaitTimeSeconds=0,
            VisibilityTimeout=max(1, min(MAX_VISIBILITY_SECONDS, hide_seconds)),
        )

    def extend_visibility(self, messages: list[QueueMessage], seconds: int) -> list[str]:
        """Keep messages hidden ``seconds`` more, ten a call; returns the ids SQS refused."""
        return self._batch(
            "change_message_visibility_batch",
            "extend message visibility",
            messages,
            VisibilityTimeout=max(0, min(MAX_VISIBILITY_SECONDS, seconds)),
        )

    def release(self, messages: list[QueueMessage]) -> list[str]:
        """Make messages visible again at once (visibility 0); returns the ids SQS refused."""
        return self._batch(
            "change_message_visibility_batch", "release messages", messages, VisibilityTimeout=0
        )

    def send_with_attributes(self, body: str, attributes: dict[str, Any]) -> str:
        """Put a copy of a message on this queue with the given message attributes; its new id."""
        return self._call(
            "send_message",
            "send message copy",
            QueueUrl=self.url,
            MessageBody=body,
            MessageAttributes=attributes,
        )["MessageId"]

    def delete(self, message: QueueMessage) -> None:
        self._on_message("delete_message", "delete message", message)
