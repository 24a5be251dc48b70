"""Create what carries SES's delivery events to the events queue, idempotently (``manage.py
bootstrap_aws``): the SNS topic and its subscriptions, and the configuration set that publishes
to it. The tables and queues are ``emailops.aws.provision``'s.
"""

from __future__ import annotations

import json
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from emailops.aws.clients import error_code, translate_error
from emailops.aws.provision import Report

__all__ = [
    "EVENT_DESTINATION",
    "ensure_configuration_set",
    "ensure_events_topic",
    "ensure_notifications_subscription",
]

_QUEUE_POLICY_SID = "emailops-ses-events-topic"
# SES v2 publishes every kind; the v1 API (moto's only one) lacks DeliveryDelay and Subscription.
_EVENT_TYPES_V2 = [
    "SEND",
    "REJECT",
    "BOUNCE",
    "COMPLAINT",
    "DELIVERY",
    "OPEN",
    "CLICK",
    "RENDERING_FAILURE",
    "DELIVERY_DELAY",
    "SUBSCRIPTION",
]
_EVENT_TYPES_V1 = [
    "send",
    "reject",
    "bounce",
    "complaint",
    "delivery",
    "open",
    "click",
    "renderingFailure",
]
EVENT_DESTINATION = "emailops-sns"


def ensure_events_topic(sns: Any, sqs: Any, name: str, queue_url: str, report: Report) -> str:
    """The SNS topic SES publishes to, subscribed by the events queue with the SNS envelope (raw
    delivery off, so messages carry a verifiable signature); the queue policy lets only this
    topic send. Returns the topic ARN."""
    try:
        topic_arn = sns.create_topic(Name=name)["TopicArn"]  # idempotent: returns the existing one
        queue_arn = _subscribe_queue(sns, sqs, topic_arn, queue_url, _QUEUE_POLICY_SID)
    except (ClientError, BotoCoreError) as exc:
        raise translate_error(exc, "set up events topic", key=name) from exc
    report(f"topic {name}: {topic_arn}, subscribed by {queue_arn}")
    return topic_arn


def ensure_notifications_subscription(
    sns: Any, sqs: Any, topic_arn: str, queue_url: str, report: Report
) -> None:
    """Subscribe the events queue to a topic that exists already: the Go service's topic of SES
    identity notifications (``notificationType`` Bounce/Complaint/Delivery), which the events
    consumer reads beside event publishing and applies once (the same event ids)."""
    try:
        queue_arn = _subscribe_queue(
            sns, sqs, topic_arn, queue_url, f"{_QUEUE_POLICY_SID}Notifications"
        )
    except (ClientError, BotoCoreError) as exc:
        raise translate_error(exc, "subscribe to the notifications topic", key=topic_arn) from exc
    report(f"topic {topic_arn}: subscribed by {queue_arn} (SES identity notifications)")


def _subscribe_queue(sns: Any, sqs: Any, topic_arn: str, queue_url: str, sid: str) -> str:
    """The queue policy lets ``topic_arn`` send (statement ``sid``), and the queue subscribes with
    the SNS envelope. Returns the queue's ARN."""
    queue_arn = sqs.get_queue_attributes(QueueUrl=queue_url, AttributeNames=["QueueArn"])[
        "Attributes"
    ]["QueueArn"]
    policy_text = (
        sqs.get_queue_attributes(QueueUrl=queue_url, AttributeNames=["Policy"])
        .get("Attributes", {})  # absent when the queue has no policy
        .get("Policy")
    )
    policy = json.loads(policy_text) if policy_text else {"Version": "2012-10-17"}
    statements = policy.setdefault("Statement", [])
    if not any(s.get("Sid") == sid for s in statements):
        statements.append(
            {
                "Sid": sid,
                "Effect": "Allow",
                "Principal": {"Service": "sns.amazonaws.com"},
                "Action": "sqs:SendMessage",
                "Resource": queue_arn,
                "Condition": {"ArnEquals": {"aws:SourceArn": topic_arn}},
            }
        )
        sqs.set_queue_attributes(QueueUrl=queue_url, Attributes={"Policy": json.dumps(policy)})
    subscribed = sns.list_subscriptions_by_topic(TopicArn=topic_arn).get("Subscriptions", [])
    if not any(s.get("Endpoint") == queue_arn for s in subscribed):
        sns.subscribe(
            TopicArn=topic_arn,
            Protocol="sqs",
            Endpoint=queue_arn,
            Attributes={"RawMessageDelivery": "false"},
        )
    return queue_arn


def ensure_configuration_set(
    ses: Any, sesv2: Any, name: str, topic_arn: str, report: Report
) -> None:
    """The configuration set every email is sent with, and its event destination: the topic.

    Where neither SES API can create the destination (an emulator), it says so and carries on.
    """
    try:
        ses.create_configuration_set(ConfigurationSet={"Name": name})
        report(f"configuration set {name}: created")
    except ClientError as exc:
        if error_code(exc) != "ConfigurationSetAlreadyExists":
            raise translate_error(exc, "create configuration set", key=name) from exc
        report(f"configuration set {name}: exists")
    except BotoCoreError as exc:
        raise translate_error(exc, "create configuration set", key=name) from exc
    try:
        sesv2.create_configuration_set_event_destination(
            ConfigurationSetName=name,
            EventDestinationName=EVENT_DESTINATION,
            EventDestination={
                "Enabled": True,
                "MatchingEventTypes": _EVENT_TYPES_V2,
                "SnsDestination": {"TopicArn": topic_arn},
            },
        )
        report(f"configuration set {name}: every event type published to {topic_arn}")
        return
    except ClientError as exc:
        if error_code(exc) == "AlreadyExistsException":
            report(f"configuration set {name}: event destination {EVENT_DESTINATION} exists")
            return
        v2_problem = _in_one_line(exc)
    except (BotoCoreError, NotImplementedError) as exc:  # moto has no sesv2 event destinations
        v2_problem = _in_one_line(exc)
    try:
        ses.create_configuration_set_event_destination(
            ConfigurationSetName=name,
            EventDestination={
                "Name": EVENT_DESTINATION,
                "Enabled": True,
                "MatchingEventTypes": _EVENT_TYPES_V1,
                "SNSDestination": {"TopicARN": topic_arn},
            },
        )
        report(
            f"configuration set {name}: events published to {topic_arn} through the SES v1 API "
            f"instead (sesv2 refused: {v2_problem}), so without DeliveryDelay/Subscription events"
        )
    except ClientError as exc:
        if error_code(exc) == "EventDestinationAlreadyExists":
            report(f"configuration set {name}: event destination {EVENT_DESTINATION} exists")
            return
        problem = _in_one_line(exc)
        report(
            f"WARNING configuration set {name}: NO event destination (sesv2: {v2_problem}; {problem})"
        )
    except (BotoCoreError, NotImplementedError) as exc:
        problem = _in_one_line(exc)
        report(
            f"WARNING configuration set {name}: NO event destination (sesv2: {v2_problem}; {problem})"
        )


def _in_one_line(exc: BaseException) -> str:
    """An error as one short line for the report. An emulator answers an API it lacks with a whole
    HTML 404 page as the "message": that becomes its HTTP status."""
    if isinstance(exc, ClientError):
        code = error_code(exc) or "error"
        status = exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode")
        lines = str(exc.response.get("Error", {}).get("Message", "")).strip().splitlines()
        if not lines or lines[0].lstrip().startswith("<"):
            return f"HTTP {status}, not available here" if code == str(status) else code
        return f"{code}: {lines[0][:200]}"
    lines = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {lines[0][:200]}" if lines else type(exc).__name__
