"""python manage.py enqueue_email — put an EmailRequest on the queue, for trying things out."""

from __future__ import annotations

import json
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from emailops import container
from emailops.core.contract import parse_complete_request
from emailops.core.errors import EmailOpsError


class Command(BaseCommand):
    help = (
        "Enqueue a request from a JSON file (--file) or from flags (--message-id, --to, --context)."
    )

    def add_arguments(self, parser):
        parser.add_argument("--file", type=Path, help="a JSON EmailRequest (as producers send it)")
        parser.add_argument("--message-id")
        parser.add_argument(
            "--to", action="append", default=[], metavar="EMAIL", help="recipient (repeatable)"
        )
        parser.add_argument("--context", default="{}", help="JSON object of template variables")
        parser.add_argument("--dedupe-id", default="")
        parser.add_argument(
            "--raw",
            action="store_true",
            help="send the file as is, without validating it (to try bad input)",
        )

    def handle(self, *args, file, message_id, to, context, dedupe_id, raw, **options):
        if file:
            body = file.read_text(encoding="utf-8")
        elif message_id and to:
            try:
                payload = {
                    "messageId": message_id,
                    "recipients": [{"email": e} for e in to],
                    "context": json.loads(context),
                }
            except ValueError as exc:
                raise CommandError(f"--context is not JSON: {exc}") from exc
            if dedupe_id:
                payload["dedupeId"] = dedupe_id
            body = json.dumps(payload)
        else:
            raise CommandError("give --file, or --message-id with at least one --to")
        if not raw:
            try:
                # The consumer would send the rest; someone typing this wants to hear it first.
                request = parse_complete_request(body)
            except EmailOpsError as exc:
                raise CommandError(f"{exc.describe()} (use --raw to enqueue it anyway)") from exc
            self._warn_without_mapping(request.message_id)
        try:
            sqs_id = container.current().queue.send(body)
        except EmailOpsError as exc:
            raise CommandError(exc.describe()) from exc
        self.stdout.write(f"enqueued sqsMessageId={sqs_id}")

    def _warn_without_mapping(self, message_id: str) -> None:
        """Enqueued all the same (trying a failure is a use), but said first: the consumer
        fails a request whose messageId has no template mapping."""
        try:
            mapping = container.current().mapping_store.get_mapping(message_id)
        except EmailOpsError as exc:
            self.stderr.write(f"warning: the template mappings could not be read: {exc.describe()}")
            return
        if mapping is None:
            self.stderr.write(
                f"warning: no template mapping has messageId {message_id!r}: the consumer will "
                "fail this request (FAILED, then the dead-letter queue). Check the name under "
                "Template mappings in the console (emailops/data/samples/mappings.json on the local stack)."
            )
