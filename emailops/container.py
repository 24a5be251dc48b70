"""The composition root: one ``Container`` built from the typed ``Config`` holds every adapter and
builds the pipeline, for every process (the consumers, the send API, the console's pages and jobs).

An adapter is built on first use and kept for the container's life; building one makes no network
call (the simulator's SNS topic is created on its first publish, SES's send quota is read on the
limiter's first use). "Reset" is a new container: ``reset()`` drops the process's current one, and
``current()`` builds the next from the settings as they are then.
"""

from __future__ import annotations

import threading
import time
from functools import cached_property
from typing import TYPE_CHECKING, Any

from django.core.signals import setting_changed

from emailops import pipeline_build
from emailops.aws.clients import AwsClients
from emailops.aws.journal import DynamoJournal
from emailops.aws.mappings import DynamoMappingStore
from emailops.aws.preferences import DynamoPreferenceStore
from emailops.aws.s3 import S3TemplateStore
from emailops.aws.ses import SesSender
from emailops.aws.sqs import SqsQueue
from emailops.aws.sqs_messages import QueueInfo
from emailops.aws.suppression import DynamoSuppressionList, SesAccountSuppression
from emailops.config import Config, require
from emailops.container_shared import SharedStateAdapters
from emailops.core.errors import ConfigurationFault
from emailops.core.lease import LeasePolicy
from emailops.core.ports import JournalReader
from emailops.core.preference_cache import CachedPreferenceStore
from emailops.core.preferences import UnsubscribeLinks
from emailops.core.rendering import Renderer
from emailops.core.webhooks import NullOutbox, WebhookOutbox
from emailops.redis.suppression import RedisSuppressionIndex

# Imported where used: the consumer never needs them, and its start-up is measured (bench/startup.py).
if TYPE_CHECKING:
    from emailops.aws.erasure import RecipientEraser
    from emailops.aws.journal_events import DynamoEventJournal
    from emailops.aws.journal_scan import JournalScan
    from emailops.aws.journal_search import JournalSearch
    from emailops.aws.ses_account import SesAccountView
    from emailops.aws.ses_simulator import SimulatingSender
    from emailops.aws.sns_verify import SnsVerifier
    from emailops.aws.tombstones import DynamoTombstones
    from emailops.aws.unmatched_events import DynamoUnmatchedEvents
    from emailops.aws.webhook_outbox import DynamoWebhookOutbox
    from emailops.core.compose import Composer
    from emailops.core.delivery_handler import DeliveryEventHandler
    from emailops.core.erasure import IndexedTombstones
    from emailops.core.pipeline import EmailPipeline

__all__ = ["Container", "current", "install", "reset"]


class Container(SharedStateAdapters):
    """Adapters built from one ``Config``, each on first use, on this container's own AWS clients
    (``clients``: made on first use, kept, and pooled as the container was built)."""

    def __init__(self, config: Config, *, clients: AwsClients | None = None) -> None:
        self.config = config
        self.clients = clients if clients is not None else AwsClients()
        self._queue_info: QueueInfo | None = None

    def with_connections(self, connections: int) -> Container:
        """A new container of the same config whose AWS clients pool ``connections`` connections
        each (a consumer's: one per thread that may call AWS at once). It installs nothing: the
        consumer keeps it, and the process's container stays as it was."""
        return Container(self.config, clients=AwsClients(pool_size=connections))

    @property
    def sender_addresses(self) -> tuple[str, tuple[str, ...]]:
        """(From, Reply-To): EMAIL_SENDER/EMAIL_REPLY_TO, else Pennsieve's support address."""
        return self.config.sending.addresses()

    # --- AWS adapters ----------------------------------------------------------------------------

    def client(self, service: str, *, sdk_retries: bool = True) -> Any:
        return self.clients.client(service, region=self.config.aws.region, sdk_retries=sdk_retries)

    @property
    def _journal_table(self) -> str:
        return require("JOURNAL_TABLE", self.config.aws.journal_table)

    @cached_property
    def renderer(self) -> Renderer:
        return Renderer()

    @cached_property
    def mapping_store(self) -> DynamoMappingStore:
        table = require("TEMPLATES_TABLE", self.config.aws.templates_table)
        return DynamoMappingStore(self.client("dynamodb"), table)

    @cached_property
    def journal(self) -> DynamoJournal:
        return DynamoJournal(
            self.client("dynamodb"), self._journal_table, outbox=self.webhook_outbox_store
        )

    @cached_property
    def webhook_outbox_store(self) -> DynamoWebhookOutbox | None:
        """The durable webhook outbox (``<JOURNAL_TABLE>-webhook-outbox``): the journal writes
        each event with its fact, the webhook workers fan out and delete. None when off."""
        if not self.config.webhooks.emitted:
            return None
        from emailops.aws.webhook_outbox import DynamoWebhookOutbox, outbox_table

        return DynamoWebhookOutbox(self.client("dynamodb"), outbox_table(self._journal_table))

    @property
    def journal_reader(self) -> JournalReader:
        """The journal as the console and the API read it: typed rows (JournalRow)."""
        return self.journal

    @cached_property
    def lease_journal(self) -> DynamoJournal:
        """The journal for the consumer's lease keeper: its own clients, short timeouts."""
        client = self.clients.lease_client("dynamodb", region=self.config.aws.region)
        return DynamoJournal(client, self._journal_table)

    @cached_property
    def lease_queue(self) -> SqsQueue:
        """The request queue for visibility changes (the keeper's, and hand-backs): short timeouts."""
        url = require("EMAIL_SERVICE_QUEUE_URL", self.config.aws.queue_url)
        return SqsQueue(self.clients.lease_client("sqs", region=self.config.aws.region), url)

    @cached_property
    def journal_search(self) -> JournalSearch:
        from emailops.aws.journal_search import JournalSearch

        cutover = self.config.console.go_cutover
        return JournalSearch(self.client("dynamodb"), self._journal_table, go_rows_until=cutover)

    @cached_property
    def journal_scan(self) -> JournalScan:
        from emailops.aws.journal_scan import JournalScan

        return JournalScan(self.client("dynamodb"), self._journal_table)

    @cached_property
    def tombstones(self) -> DynamoTombstones | IndexedTombstones:
        """Erasure's tombstones (ERASURE_TOMBSTONE_TABLE, keyed by ERASURE_HASH_KEY), behind a
        Redis set of their hashes (``<SES_RATE_REDIS_KEY>:suppressed:erased``), so a send's check
        costs no DynamoDB read (only the erasure writes them, so the set misses none); no key, no
        set."""
        from emailops.aws.tombstones import DynamoTombstones
        from emailops.core.erasure import IndexedTombstones

        aws, sending = self.config.aws, self.config.sending
        table = DynamoTombstones(
            self.client("dynamodb"),
            require("ERASURE_TOMBSTONE_TABLE", aws.erasure_tombstone_table),
            key=aws.erasure_hash_key.encode(),
        )
        if not sending.suppression_index_prefix:
            return table
        key = f"{sending.suppression_index_prefix}:erased"
        index = RedisSuppressionIndex.from_url(sending.redis_url, key=key)
        return IndexedTombstones(table, index, clock=time.monotonic)

    @cached_property
    def recipient_eraser(self) -> RecipientEraser:
        from emailops.aws.erasure import RecipientEraser

        return RecipientEraser(
            self.client("dynamodb"),
            journal_table=self._journal_table,
            unmatched_table=self.config.events.unmatched_table,
        )

    @cached_property
    def template_store(self) -> S3TemplateStore:
        aws = self.config.aws
        client = self.clients.client(
            "s3", region=aws.region, s3_addressing_style=aws.s3_addressing_style
        )
        return S3TemplateStore(require("S3_BUCKET", aws.s3_bucket), client=client)

    @cached_property
    def queue(self) -> SqsQueue:
        url = require("EMAIL_SERVICE_QUEUE_URL", self.config.aws.queue_url)
        return SqsQueue(self.client("sqs"), url)

    def queue_info(self) -> QueueInfo:
        """The request queue's visibility timeout and dead-letter queue, read once per container
        (on first use): the consumer's start-up and the claim lease both read these."""
        if self._queue_info is None:
            if not self.config.aws.queue_url:
                raise ConfigurationFault(
                    "read the request queue", reason="EMAIL_SERVICE_QUEUE_URL is not set"
                )
            self._queue_info = self.queue.describe()
        return self._queue_info

    @cached_property
    def lease_policy(self) -> LeasePolicy:
        """When a claim ends (``emailops.core.lease``), the one policy of this process: the
        consumer claims with it, and the pages, ``email_log``, the API, the events path and the
        stuck-claims check read rows with it. CLAIM_LEASE_SECONDS, else the queue's visibility
        timeout, read when a length is first needed (LeaseUnknown when it cannot be)."""
        return LeasePolicy(
            self.config.sending.claim_lease_seconds,
            visibility_timeout=lambda: self.queue_info().visibility_timeout,
        )

    @cached_property
    def sender(self) -> SesSender | SimulatingSender:
        sending = self.config.sending
        # Sends are never repeated by botocore (see emailops.aws.clients._NO_RETRIES).
        ses = SesSender(
            self.client("ses", sdk_retries=False), configuration_set=sending.configuration_set
        )
        if not sending.simulate_events:
            return ses
        from emailops.aws.ses_simulator import SimulatingSender

        return SimulatingSender(
            ses,
            self.client("sns"),
            topic_name=self.config.events.topic_name,
            configuration_set=sending.configuration_set,
        )

    @cached_property
    def event_journal(self) -> DynamoEventJournal:
        from emailops.aws.journal_events import DynamoEventJournal

        return DynamoEventJournal(
            self.client("dynamodb"),
            self._journal_table,
            lease=self.lease_policy,
            outbox=self.webhook_outbox_store,
        )

    @cached_property
    def unmatched_events(self) -> DynamoUnmatchedEvents:
        from emailops.aws.unmatched_events import DynamoUnmatchedEvents

        return DynamoUnmatchedEvents(
            self.client("dynamodb"),
            require("SES_EVENTS_UNMATCHED_TABLE", self.config.events.unmatched_table),
            ttl_seconds=self.config.sending.journal_ttl_days * 86400,
        )

    @cached_property
    def events_queue(self) -> SqsQueue:
        url = require("SES_EVENTS_QUEUE_URL", self.config.events.queue_url)
        return SqsQueue(self.client("sqs"), url)

    @cached_property
    def sns_verifier(self) -> SnsVerifier:
        from emailops.aws.sns_verify import SnsVerifier

        events = self.config.events
        return SnsVerifier(
            verify_signatures=events.verify_signatures,
            allowed_topics=list(events.topic_arns),
            raw_delivery=events.raw_delivery,
            max_age_seconds=events.max_age_seconds,
        )

    @cached_property
    def delivery_event_handler(self) -> DeliveryEventHandler:
        from emailops.core.delivery_handler import DeliveryEventHandler

        return DeliveryEventHandler(
            journal=self.event_journal,
            suppressions=self.suppression_list,
            unmatched=self.unmatched_events,
            verify=self.sns_verifier,
            clock=time.time,
            stats=self.stats,
            tombstones=self.tombstones,
            outbox=self.webhook_outbox,
        )

    @cached_property
    def webhook_outbox(self) -> WebhookOutbox:
        """What wakes the webhook workers once an event is in the durable outbox (WEBHOOK_OUTBOX):
        a Celery task; nothing when off."""
        if self.config.webhooks.emitted:
            from emailops.webhook_outbox import CeleryOutbox

            return CeleryOutbox(queue=self.config.webhooks.queue)
        return NullOutbox()

    @cached_property
    def suppression_list(self) -> DynamoSuppressionList:
        """The table itself, for every reader and writer: the consumer's check (one GetItem, two
        for a spelling other than the normalised one), the events consumer's and the console's.
        No index in front: the Go service writes the table too, and a suppression it writes must
        stop the very next send (docs/pipeline.md, "The suppression check")."""
        sending = self.config.sending
        sync = (
            SesAccountSuppression(self.client("sesv2"))
            if sending.account_suppression_sync
            else None
        )
        return DynamoSuppressionList(
            self.client("dynamodb"),
            require("SUPPRESSION_TABLE", self.config.aws.suppression_table),
            account_sync=sync,
        )

    @cached_property
    def preference_store(self) -> DynamoPreferenceStore:
        """Recipient preferences (PREFERENCES_TABLE), read and written as they are: the public
        unsubscribe page's and the console's (a change must show at once)."""
        table = require("PREFERENCES_TABLE", self.config.aws.preferences_table)
        return DynamoPreferenceStore(self.client("dynamodb"), table)

    @cached_property
    def cached_preference_store(self) -> CachedPreferenceStore:
        """The preferences as the pipeline reads them before a categorised send: each answer kept
        PREFERENCES_CACHE_SECONDS, shared by every pipeline of the process (the API builds one a
        request)."""
        return CachedPreferenceStore(
            self.preference_store,
            seconds=self.config.sending.preferences_cache_seconds,
            lock=threading.Lock(),
        )

    @cached_property
    def unsubscribe_links(self) -> UnsubscribeLinks:
        """The one-click unsubscribe URL of (address, category) the pipeline puts in the
        List-Unsubscribe header and the template's ``unsubscribeUrl``: an encrypted token on
        PUBLIC_BASE_URL (emailops.unsubscribe); None, and no header, while it is unset."""
        from emailops.unsubscribe import unsubscribe_links_from_config

        return unsubscribe_links_from_config(self.config)

    @cached_property
    def ses_account_view(self) -> SesAccountView:
        from emailops.aws.ses_account import SesAccountView

        return SesAccountView(self.client("sesv2"), self.client("cloudwatch"), self.client("ses"))

    # --- the pipeline ----------------------------------------------------------------------------

    def composer(self, *, cache_seconds: float = 0) -> Composer:
        """Mapping + template + renderer, cached for ``cache_seconds`` (the consumer's) or not."""
        return pipeline_build.build_composer(self, cache_seconds=cache_seconds)

    def build_pipeline(self, *, lease_seconds: int, recipient_threads: int = 0) -> EmailPipeline:
        """claim → send → mark: the one pipeline of the consumer and the API."""
        return pipeline_build.build_pipeline(
            self, lease_seconds=lease_seconds, recipient_threads=recipient_threads
        )


# --- the process's container ----------------------------------------------------------------------

_current: Container | None = None
_current_lock = threading.Lock()


def current() -> Container:
    """The process's container, built from the settings on first use after start or ``reset()``."""
    global _current
    built = _current
    if built is None:
        with _current_lock:
            if _current is None:
                _current = Container(Config.from_settings())
            built = _current
    return built


def install(container: Container | None) -> None:
    """Make ``container`` the process's (tests install one of their own; None: build anew)."""
    global _current
    _current = container


def reset() -> None:
    """A new container on next use, with new AWS clients of its own (tests between AWS stacks)."""
    install(None)


def _forget_on_setting_change(**_: Any) -> None:
    # Django sends this only when settings are overridden (tests): the next use sees the change.
    install(None)


setting_changed.connect(_forget_on_setting_change)
