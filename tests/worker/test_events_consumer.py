"""`manage.py consume_ses_events` on in-process moto: SES events published to the topic reach the
journal; unreadable or foreign messages go to the events DLQ with a reason. And what
`bootstrap_aws` sets up for delivery events."""

from __future__ import annotations

import io
import json
import threading

import pytest
from cryptography.hazmat.primitives.asymmetric import rsa
from django.core.management import call_command

from emailops import container
from emailops.aws.sqs import SqsQueue
from tests.aws.test_journal import NOW, claim
from tests.core.test_delivery_events import SES_ID, ses_event
from tests.support.stack import wait_until
from worker.events_consumer import EventsConsumer

KEY = "journal-key-1"


def consume(*args: str) -> str:
    out = io.StringIO()
    call_command("consume_ses_events", "--until-empty", "--wait-time", "0", *args, stdout=out)
    return out.getvalue()


def publish(aws, event: dict) -> None:
    aws.sns.publish(TopicArn=aws.topic_arn, Message=json.dumps(event))


def sent_row() -> None:
    journal = container.current().journal
    journal.claim(claim(KEY, recipient="recipient@example.com"))
    journal.mark_sent(KEY, attempt=1, provider_id=SES_ID, sent_at=NOW)


def test_events_from_the_topic_update_the_row(aws_events):
    sent_row()
    for name in ("send.json", "delivery.json", "bounce.json"):
        publish(aws_events, ses_event(name))
    publish(aws_events, ses_event("bounce.json"))  # SES said it twice
    out = consume()
    assert "received=4 applied=3 duplicates=1 stored=0 retried=0 dead_lettered=0" in out
    row = container.current().journal.get(KEY)
    assert row["DeliveryStatus"] == "BOUNCED"
    assert [e["Type"] for e in row["DeliveryEvents"]] == ["Send", "Delivery", "Bounce"]
    assert container.current().suppression_list.get("recipient@example.com").reason == "bounce"
    assert aws_events.queue_messages(aws_events.events_queue_url) == []


def test_bad_and_foreign_messages_go_to_the_dead_letter_queue(aws_events, settings):
    settings.SES_EVENTS_TOPIC_ARNS = ["arn:aws:sns:us-east-1:123456789012:someone-elses"]
    container.reset()
    aws_events.sqs.send_message(QueueUrl=aws_events.events_queue_url, MessageBody="not json")
    publish(aws_events, ses_event("delivery.json"))  # from our topic, which is not allowed now
    out = consume()
    assert "dead_lettered=2" in out
    reasons = sorted(
        m["MessageAttributes"]["FailureReason"]["StringValue"]
        for m in aws_events.queue_messages(aws_events.events_queue_url + "-dlq")
    )
    assert len(reasons) == 2
    assert "not JSON" in reasons[0] and "SES_EVENTS_TOPIC_ARNS" in reasons[1]


def test_signatures_on_refuse_unsigned_envelopes(aws_events, settings):
    settings.SES_EVENTS_VERIFY_SIGNATURES = True
    settings.SES_EVENTS_TOPIC_ARNS = [aws_events.topic_arn]
    container.reset()
    body = {"Type": "Notification", "TopicArn": aws_events.topic_arn, "Message": "{}"}
    aws_events.sqs.send_message(QueueUrl=aws_events.events_queue_url, MessageBody=json.dumps(body))
    assert "dead_lettered=1" in consume()


def test_a_bare_bounce_with_signatures_on_is_dead_lettered_not_applied(aws_events, settings):
    """The finding: a bare Bounce JSON sent straight to the events queue (no SNS envelope)
    suppressed its recipient, with verification on and an allow-list set."""
    settings.SES_EVENTS_VERIFY_SIGNATURES = True
    settings.SES_EVENTS_TOPIC_ARNS = [aws_events.topic_arn]
    container.reset()
    bounce = ses_event("bounce.json")
    aws_events.sqs.send_message(
        QueueUrl=aws_events.events_queue_url, MessageBody=json.dumps(bounce)
    )
    assert "applied=0" in (out := consume()) and "dead_lettered=1" in out
    assert container.current().suppression_list.get("recipient@example.com") is None
    [dead] = aws_events.queue_messages(aws_events.events_queue_url + "-dlq")
    assert "no SNS envelope" in dead["MessageAttributes"]["FailureReason"]["StringValue"]


def test_a_correctly_signed_bounce_from_2019_is_dead_lettered_not_applied(aws_events, settings):
    """The finding: a genuine signed SNS message never expired, so one captured years ago and
    sent to the queue again suppressed its recipient. Its twin dated now still applies."""
    from tests.aws.test_sns_verify import CERT_URL, TOPIC, Fetcher, _certificate, signed

    settings.SES_EVENTS_VERIFY_SIGNATURES = True
    settings.SES_EVENTS_TOPIC_ARNS = [aws_events.topic_arn]
    container.reset()
    assert aws_events.topic_arn == TOPIC  # what the stand-in signs for
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    fetcher = Fetcher(_certificate(key))
    container.current().sns_verifier.fetch = fetcher  # the one container at --concurrency 1
    sent_row()
    bounce = json.dumps(ses_event("bounce.json"))

    replayed = signed(key, message=bounce, timestamp="2019-05-02T19:50:51.123Z")
    aws_events.sqs.send_message(QueueUrl=aws_events.events_queue_url, MessageBody=replayed)
    out = consume("--concurrency", "1")
    assert "applied=0" in out and "dead_lettered=1" in out
    assert fetcher.calls == [CERT_URL]  # the signature was good: the age refused it
    assert container.current().suppression_list.get("recipient@example.com") is None
    assert container.current().journal.get(KEY).get("DeliveryStatus") != "BOUNCED"
    [dead] = aws_events.queue_messages(aws_events.events_queue_url + "-dlq")
    assert dead["Body"] == replayed
    assert (
        "SNS message Timestamp 2019-05-02T19:50:51.123Z is older than "
        "SES_EVENTS_MAX_AGE_SECONDS (30 days)"
    ) in dead["MessageAttributes"]["FailureReason"]["StringValue"]

    fresh = signed(key, message=bounce)
    aws_events.sqs.send_message(QueueUrl=aws_events.events_queue_url, MessageBody=fresh)
    assert "applied=1" in consume("--concurrency", "1")
    assert container.current().suppression_list.get("recipient@example.com").reason == "bounce"


def test_raw_delivery_lets_a_bare_event_through(aws_events, settings):
    settings.SES_EVENTS_VERIFY_SIGNATURES = True
    settings.SES_EVENTS_TOPIC_ARNS = [aws_events.topic_arn]
    settings.SES_EVENTS_RAW_DELIVERY = True
    container.reset()
    sent_row()
    aws_events.sqs.send_message(
        QueueUrl=aws_events.events_queue_url, MessageBody=json.dumps(ses_event("bounce.json"))
    )
    assert "applied=1" in consume()
    assert container.current().suppression_list.get("recipient@example.com").reason == "bounce"


def test_signatures_on_without_a_topic_allow_list_refuse_to_start(aws_events, settings):
    from django.core.exceptions import ImproperlyConfigured

    settings.SES_EVENTS_VERIFY_SIGNATURES = True
    settings.SES_EVENTS_TOPIC_ARNS = []
    container.reset()
    publish(aws_events, ses_event("delivery.json"))
    with pytest.raises(ImproperlyConfigured, match="SES_EVENTS_TOPIC_ARNS"):
        consume()
    assert len(aws_events.queue_messages(aws_events.events_queue_url)) == 1  # not read


def test_unmatched_events_wait_then_max_messages_stops(aws_events):
    publish(aws_events, ses_event("delivery.json"))  # no journal row yet
    publish(aws_events, ses_event("send.json"))
    out = consume("--max-messages", "1")
    assert "received=1" in out and "retried=1" in out


def test_a_missing_setting_is_named(aws_events, settings):
    from django.core.exceptions import ImproperlyConfigured

    settings.SES_EVENTS_QUEUE_URL = ""
    container.reset()
    with pytest.raises(ImproperlyConfigured, match="SES_EVENTS_QUEUE_URL"):
        consume()


# --- bootstrap_aws ---------------------------------------------------------------------------------


def test_bootstrap_sets_up_delivery_events_idempotently(aws, settings):
    settings.SES_EVENTS_QUEUE_URL = aws.queue_url.replace("email-service-queue", "ses-events")
    settings.SES_CONFIGURATION_SET = "emailops"
    outputs = []
    for _ in range(2):
        out = io.StringIO()
        call_command("bootstrap_aws", stdout=out)
        outputs.append(out.getvalue())
    assert "topic email-ses-events" in outputs[0]
    assert "SES_EVENTS_TOPIC_ARNS=arn:aws:sns:us-east-1:" in outputs[0]
    assert "configuration set emailops: created" in outputs[0]
    assert "configuration set emailops: exists" in outputs[1]
    assert "event destination emailops-sns exists" in outputs[1]
    # moto has only the v1 API for event destinations: we said so, and used it.
    described = aws.ses.describe_configuration_set(
        ConfigurationSetName="emailops", ConfigurationSetAttributeNames=["eventDestinations"]
    )
    [destination] = described["EventDestinations"]
    assert "bounce" in destination["MatchingEventTypes"]
    topic_arn = destination["SNSDestination"]["TopicARN"]
    assert topic_arn.endswith(":email-ses-events")
    subscriptions = (
        container.current()
        .client("sns")
        .list_subscriptions_by_topic(TopicArn=topic_arn)["Subscriptions"]
    )
    assert len(subscriptions) == 1 and subscriptions[0]["Endpoint"].endswith(":ses-events")
    policy = json.loads(
        aws.sqs.get_queue_attributes(
            QueueUrl=settings.SES_EVENTS_QUEUE_URL, AttributeNames=["Policy"]
        )["Attributes"]["Policy"]
    )
    [statement] = policy["Statement"]
    assert statement["Condition"] == {"ArnEquals": {"aws:SourceArn": topic_arn}}
    for table in ("email-suppression", "email-delivery-events-unmatched"):
        aws.dynamodb.describe_table(TableName=table)
    dlq = aws.queue_messages(settings.SES_EVENTS_QUEUE_URL + "-dlq")
    assert dlq == []  # it exists


class BlockingQueue(SqsQueue):
    """The real adapter, whose receive is a long poll that returns only when the test says so."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.polling, self.answer = threading.Event(), threading.Event()
        self.released: list[str] = []

    def receive(self, *, max_messages=10, wait_seconds=20):
        self.polling.set()
        assert self.answer.wait(30), "the test never answered the poll"
        return super().receive(max_messages=max_messages, wait_seconds=0)

    def release(self, messages):
        self.released += [m.message_id for m in messages]
        return super().release(messages)


def test_a_stop_does_not_wait_for_the_long_poll_and_hands_its_batch_back(aws_events):
    """Docker stops a container with SIGKILL 10 s after SIGTERM; a long poll lasts up to 20 s."""
    queue = BlockingQueue(aws_events.sqs, aws_events.events_queue_url)
    consumer = EventsConsumer(queue=queue, handler=None, dead_letter_url=None)
    stop = threading.Event()
    loop = threading.Thread(target=consumer.run, kwargs={"stop": stop}, daemon=True)
    loop.start()
    assert queue.polling.wait(10)

    stop.set()
    loop.join(10)
    alive_during_the_poll = loop.is_alive()
    publish(aws_events, ses_event("delivery.json"))  # the poll brings it after the stop
    queue.answer.set()

    assert not alive_during_the_poll
    assert wait_until(lambda: queue.released, timeout=10)
    assert consumer.stats.received == 0
    assert len(aws_events.queue_messages(aws_events.events_queue_url)) == 1  # visible again


def test_bootstrap_says_in_one_line_per_resource_what_replaced_sesv2(
    aws_env, settings, monkeypatch, moto_server
):
    """moto's server answers sesv2's event destinations with a whole HTML 404 page; the report
    stays one line per resource and says the v1 API was used instead."""
    endpoint = moto_server.url
    monkeypatch.setenv("AWS_ENDPOINT_URL", endpoint)  # boto3 sends every client there
    settings.AWS_REGION = "us-east-1"
    settings.TEMPLATES_TABLE = "email-message-templates"
    settings.JOURNAL_TABLE = "email-journal"
    settings.SUPPRESSION_TABLE = "email-suppression"
    settings.S3_BUCKET = "emailops-templates"
    settings.EMAIL_SENDER = "Pennsieve <support@pennsieve.test>"
    settings.EMAIL_SERVICE_QUEUE_URL = f"{endpoint}/123456789012/email-service-queue"
    settings.SES_EVENTS_QUEUE_URL = f"{endpoint}/123456789012/ses-events"
    settings.SES_CONFIGURATION_SET = "emailops"
    container.reset()  # a new container: new clients, made for this endpoint
    try:
        out = io.StringIO()
        call_command("bootstrap_aws", stdout=out)
    finally:
        container.reset()
    lines = out.getvalue().splitlines()
    assert not [line for line in lines if "<" in line or "html" in line.lower()], lines
    assert not [line for line in lines if not line.split(":", 1)[0].strip()], lines
    [destination] = [line for line in lines if "configuration set emailops: events" in line]
    assert "through the SES v1 API instead" in destination
    assert "sesv2 refused: HTTP 404, not available here" in destination
    assert len(destination) < 300, destination


class Rendezvous:
    """A handler whose events each wait until ``parties`` of them are in hand at once."""

    def __init__(self, parties: int) -> None:
        self.barrier = threading.Barrier(parties, timeout=10)

    def handle_batch(self, messages, *, run):
        from emailops.core.delivery_handler import EventAction, EventOutcome

        def task(body):
            self.barrier.wait()  # BrokenBarrierError (a crash: retried) when handled one by one
            return EventOutcome(EventAction.DELETE, result="applied")

        return list(run(task, [body for body, _ in messages]))


def test_events_of_a_batch_are_handled_at_once(aws_events):
    for i in range(3):
        aws_events.sqs.send_message(QueueUrl=aws_events.events_queue_url, MessageBody=f"e{i}")
    consumer = EventsConsumer(
        queue=container.current().events_queue,
        handler=Rendezvous(3),
        dead_letter_url=None,
        concurrency=4,
    )
    stats = consumer.run(stop=threading.Event(), until_empty=True, wait_time=0)
    assert (stats.received, stats.applied, stats.retried) == (3, 3, 0)


def test_many_events_of_one_row_at_once_keep_order_and_dedupe(aws_events):
    """One email's events in a batch go one after another (emails' groups at once), so their
    order and dedupe never hang on a lost race."""
    sent_row()
    for name in ("bounce.json", "delivery.json", "send.json", "bounce.json", "delivery.json"):
        publish(aws_events, ses_event(name))
    out = consume("--concurrency", "8")
    assert "received=5 applied=3 duplicates=2" in out
    row = container.current().journal.get(KEY)
    assert row["DeliveryStatus"] == "BOUNCED"
    assert [e["Type"] for e in row["DeliveryEvents"]] == ["Send", "Delivery", "Bounce"]


class RecordingQueue(SqsQueue):
    """The real adapter, recording what each receive asked for and got, and what was deleted."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.receives: list[tuple[int, int]] = []  # (asked, got)
        self.deleted: list[str] = []

    def receive(self, *, max_messages=10, wait_seconds=20):
        got = super().receive(max_messages=max_messages, wait_seconds=wait_seconds)
        self.receives.append((max_messages, len(got)))
        return got

    def delete_batch(self, messages):
        self.deleted += [m.body for m in messages]
        return super().delete_batch(messages)


class BatchRecorder:
    """A handler that records the batches it is given; bodies starting "retry" are retried."""

    def __init__(self) -> None:
        self.batches: list[list[str]] = []

    def handle_batch(self, messages, *, run):
        from emailops.core.delivery_handler import EventAction, EventOutcome

        self.batches.append([body for body, _ in messages])
        return [
            EventOutcome(EventAction.RETRY, reason="write failed")
            if body.startswith("retry")
            else EventOutcome(EventAction.DELETE, result="applied")
            for body, _ in messages
        ]


def test_receives_are_full_batches_of_ten_gathered_into_one_batch(aws_events):
    url = aws_events.events_queue_url
    for start in range(0, 25, 10):
        entries = [
            {"Id": str(i), "MessageBody": f"e{start + i}"} for i in range(min(10, 25 - start))
        ]
        aws_events.sqs.send_message_batch(QueueUrl=url, Entries=entries)
    queue = RecordingQueue(aws_events.sqs, url)
    handler = BatchRecorder()
    consumer = EventsConsumer(
        queue=queue, handler=handler, dead_letter_url=None, concurrency=1, batch_size=20
    )
    stats = consumer.run(stop=threading.Event(), until_empty=True, wait_time=0)
    assert stats.received == stats.applied == 25
    # Full receives of 10, back to back, until the batch is full or a receive comes back short.
    assert queue.receives[:3] == [(10, 10), (10, 10), (10, 5)]
    assert [len(batch) for batch in handler.batches] == [20, 5]
    assert sorted(queue.deleted) == sorted(f"e{i}" for i in range(25))


def test_only_what_was_applied_is_deleted(aws_events):
    """A failed (merged) write's events are left for redelivery; the rest of the batch goes."""
    url = aws_events.events_queue_url
    bodies = ["e0", "retry-1", "e2", "retry-3"]
    aws_events.sqs.send_message_batch(
        QueueUrl=url, Entries=[{"Id": str(i), "MessageBody": b} for i, b in enumerate(bodies)]
    )
    queue = RecordingQueue(aws_events.sqs, url)
    consumer = EventsConsumer(
        queue=queue, handler=BatchRecorder(), dead_letter_url=None, concurrency=4
    )
    stats = consumer.run(stop=threading.Event(), until_empty=True, wait_time=0)
    assert (stats.applied, stats.retried) == (2, 2)
    assert sorted(queue.deleted) == ["e0", "e2"]
    hidden = aws_events.sqs.get_queue_attributes(
        QueueUrl=url, AttributeNames=["ApproximateNumberOfMessagesNotVisible"]
    )["Attributes"]["ApproximateNumberOfMessagesNotVisible"]
    assert hidden == "2"  # waiting out their back-off, then redelivered


def test_a_crash_in_the_handler_leaves_the_whole_batch_for_redelivery(aws_events):
    class Crashing:
        def handle_batch(self, messages, *, run):
            raise RuntimeError("a bug")

    aws_events.sqs.send_message(QueueUrl=aws_events.events_queue_url, MessageBody="e0")
    queue = RecordingQueue(aws_events.sqs, aws_events.events_queue_url)
    consumer = EventsConsumer(queue=queue, handler=Crashing(), dead_letter_url=None)
    stats = consumer.run(stop=threading.Event(), until_empty=True, wait_time=0)
    assert (stats.received, stats.applied, stats.retried) == (1, 0, 1)
    assert queue.deleted == []


class FlushRecorder:
    """Counters that note when they are flushed (the handler's ``stats``)."""

    def __init__(self, *, crashes: int = 0) -> None:
        self.flushed = threading.Event()
        self.crashes = crashes  # the first flushes raise, like a bug in the counters would

    def flush(self) -> None:
        if self.crashes:
            self.crashes -= 1
            raise RuntimeError("a bug in the counters")
        self.flushed.set()


@pytest.mark.parametrize("crashes", [0, 1], ids=["flushes", "flushes-again-after-a-crash"])
def test_an_idle_events_consumer_writes_its_counters_within_a_second(aws_events, crashes, caplog):
    """Counters are written every STATS_FLUSH_SECONDS while events come; an idle consumer
    (long-polling an empty queue) must not sit on the last ones until it stops or is killed. A
    flush that raises is logged, and the flusher goes on: it does not die silently."""
    handler = BatchRecorder()
    handler.stats = FlushRecorder(crashes=crashes)
    consumer = EventsConsumer(
        queue=container.current().events_queue, handler=handler, dead_letter_url=None, concurrency=1
    )
    stop = threading.Event()
    loop = threading.Thread(target=consumer.run, kwargs={"stop": stop, "wait_time": 4}, daemon=True)
    loop.start()
    try:
        # Flushed during the first long poll; the poll, abandoned at the stop, ends in 4 s and
        # with it the receiver thread (tests/worker/conftest.py waits for it).
        assert handler.stats.flushed.wait(3)
    finally:
        stop.set()
        loop.join(10)
    assert ("stats.flush_crashed" in caplog.text) == bool(crashes)
