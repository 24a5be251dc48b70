"""python manage.py webhooks — delivery webhook endpoints from the command line (docs/webhooks.md).

    webhooks add URL [--events T,T] [--message-id ID ...] [--organization ORG]
                     [--producer api:<token id>|queue] [--include-context-keys] [--description D]
                                          prints the endpoint's id and its secret (shown once)
    webhooks list                         the endpoints, their filters and health; never a secret
    webhooks rotate ID                    a new secret; the old one signs beside it for a while
    webhooks disable ID [--reason R]      webhooks enable ID      webhooks remove ID
    webhooks reseal                       every stored secret sealed again under the first of
                                          WEBHOOK_SECRET_KEYS (a key rotation)

Every action takes --json.
"""

from __future__ import annotations

import json
from typing import Any

from django.core.management.base import CommandError
from django.utils import timezone

from emailops import container
from emailops.core.dedupe import API_NAMESPACE_PREFIX
from emailops.core.errors import EmailOpsError
from emailops.core.webhooks import EVENT_TYPES
from templates_admin.management.actions import HumanCommand
from webhooks import endpoints, liveness
from webhooks.models import WebhookEndpoint


def endpoint_json(endpoint: WebhookEndpoint) -> dict[str, Any]:
    """An endpoint as `list --json` shows it: no secret, current or previous."""
    until = endpoint.previous_secret_until
    return {
        "id": endpoint.pk,
        "url": endpoint.url,
        "description": endpoint.description,
        "enabled": endpoint.enabled,
        "disabled_reason": endpoint.disabled_reason,
        "failing": endpoint.failing,
        "consecutive_failures": endpoint.consecutive_failures,
        "event_types": list(endpoint.event_types),
        "message_ids": list(endpoint.message_ids),
        "organization": endpoint.organization,
        "producer": _producer_text(endpoint.producer),
        "include_context_keys": endpoint.include_context_keys,
        "previous_secret_until": until.isoformat(timespec="seconds") if until else None,
        "created_at": endpoint.created_at.isoformat(timespec="seconds"),
    }


def _producer_text(producer: str | None) -> str | None:
    return "queue" if producer == "" else producer


def _producer(value: str | None) -> str | None:
    """--producer: "queue" (the queue's rows, stored as ""), or api:<token id>; None: any."""
    if value is None:
        return None
    if value == "queue":
        return ""
    token_id = value.removeprefix(API_NAMESPACE_PREFIX)
    if value.startswith(API_NAMESPACE_PREFIX) and token_id.isdigit():
        return value
    raise CommandError(f"--producer must be queue or api:<token id>, not {value!r}")


def _event_types(values: list[str]) -> list[str]:
    types = [t.strip() for value in values for t in value.split(",") if t.strip()]
    unknown = [t for t in types if t not in EVENT_TYPES]
    if unknown:
        raise CommandError(
            f"unknown event type(s) {', '.join(unknown)}; known: {', '.join(EVENT_TYPES)}"
        )
    return types


class Command(HumanCommand):
    help = "Add, list, rotate the secret of, disable, enable and remove webhook endpoints."

    # As `templates`: the system checks import the URLconf (the console, the API).
    requires_system_checks: list[str] = []

    def add_arguments(self, parser):
        sub = parser.add_subparsers(dest="action", required=True)

        def action(name: str, help_text: str):
            command = sub.add_parser(name, help=help_text)
            command.add_argument("--json", action="store_true", help="print JSON")
            return command

        add = action("add", "add an endpoint; prints its id and secret (shown once)")
        add.add_argument("url")
        add.add_argument(
            "--events",
            action="append",
            default=[],
            metavar="T[,T...]",
            help=f"only these event types (default: all): {', '.join(EVENT_TYPES)}",
        )
        add.add_argument(
            "--message-id",
            action="append",
            default=[],
            dest="message_ids",
            metavar="ID",
            help="only rows of this messageId (repeatable; default: any)",
        )
        add.add_argument("--organization", default="", help="only this organizationId's rows")
        add.add_argument(
            "--producer",
            default=None,
            metavar="api:<token id>|queue",
            help="only rows one API token wrote, or only the queue's (default: any)",
        )
        add.add_argument(
            "--include-context-keys",
            action="store_true",
            help="add the request context's key names (never values) to payloads",
        )
        add.add_argument("--description", default="")
        action("list", "the endpoints (secrets are never shown)")
        rotate = action("rotate", "a new secret; the old one keeps signing for the overlap")
        rotate.add_argument("endpoint_id", type=int, metavar="ID")
        disable = action("disable", "stop delivering to an endpoint")
        disable.add_argument("endpoint_id", type=int, metavar="ID")
        disable.add_argument("--reason", default="disabled by an operator")
        enable = action("enable", "deliver again (clears the failing mark)")
        enable.add_argument("endpoint_id", type=int, metavar="ID")
        remove = action("remove", "delete an endpoint and its delivery log")
        remove.add_argument("endpoint_id", type=int, metavar="ID")
        action("reseal", "seal every secret again under the first of WEBHOOK_SECRET_KEYS")

    def handle(self, *args, action: str, **options):
        self.as_json = options["json"]
        self.adapters = container.current()
        try:
            return getattr(self, f"_{action}")(options)
        except EmailOpsError as exc:  # WebhookRefused, InvalidRequest, SecretUnreadable: one line
            raise CommandError(exc.describe()) from exc

    def _emit(self, data: Any, text: str) -> None:
        self.stdout.write(json.dumps(data, indent=2) if self.as_json else text)

    def _endpoint(self, endpoint_id: int) -> WebhookEndpoint:
        endpoint = WebhookEndpoint.objects.filter(pk=endpoint_id).first()
        if endpoint is None:
            raise CommandError(f"no webhook endpoint #{endpoint_id}")
        return endpoint

    def _add(self, options) -> None:
        endpoint, secret = endpoints.endpoint_add(
            adapters=self.adapters,
            url=options["url"],
            event_types=_event_types(options["events"]),
            message_ids=options["message_ids"],
            organization=options["organization"],
            producer=_producer(options["producer"]),
            include_context_keys=options["include_context_keys"],
            description=options["description"],
        )
        self._emit(
            endpoint_json(endpoint) | {"secret": secret},
            f"webhook endpoint #{endpoint.pk} → {endpoint.url}\n"
            f"secret (shown once; keep it to verify signatures): {secret}",
        )
        if gap := liveness.delivery_gap(adapters=self.adapters, now=timezone.now()):
            self.stderr.write(f"warning: {gap}", style_func=self.style.WARNING)

    def _list(self, options) -> None:
        endpoints = list(WebhookEndpoint.objects.all())
        lines = []
        for e in endpoints:
            state = "enabled" if e.enabled else f"disabled ({e.disabled_reason or 'no reason'})"
            if e.failing:
                state += f", failing ({e.consecutive_failures} failures in a row)"
            filters = [
                f"events={','.join(e.event_types)}" if e.event_types else "",
                f"message-ids={','.join(e.message_ids)}" if e.message_ids else "",
                f"organization={e.organization}" if e.organization else "",
                f"producer={_producer_text(e.producer)}" if e.producer is not None else "",
                "context-keys" if e.include_context_keys else "",
            ]
            lines.append(
                f"#{e.pk}  {e.url}  {state}  {' '.join(f for f in filters if f) or 'all events'}"
                + (f"  — {e.description}" if e.description else "")
            )
        self._emit(
            [endpoint_json(e) for e in endpoints], "\n".join(lines) or "no webhook endpoints"
        )

    def _rotate(self, options) -> None:
        endpoint = self._endpoint(options["endpoint_id"])
        secret = endpoints.endpoint_rotate(
            adapters=self.adapters, endpoint_id=endpoint.pk, now=timezone.now()
        )
        endpoint.refresh_from_db()
        until = endpoint.previous_secret_until
        hours = self.adapters.config.webhooks.rotation_overlap_hours
        self._emit(
            {
                "id": endpoint.pk,
                "secret": secret,
                "previous_secret_until": until.isoformat(timespec="seconds") if until else None,
            },
            f"webhook endpoint #{endpoint.pk}: new secret (shown once): {secret}\n"
            f"the old secret signs beside it until {until:%Y-%m-%d %H:%M:%S %Z}"
            f" ({hours} h, WEBHOOK_ROTATION_OVERLAP_HOURS)",
        )

    def _disable(self, options) -> None:
        endpoint = self._endpoint(options["endpoint_id"])
        endpoints.endpoint_set_enabled(
            endpoint_id=endpoint.pk, enabled=False, reason=options["reason"]
        )
        self._emit(
            {"id": endpoint.pk, "enabled": False, "disabled_reason": options["reason"]},
            f"webhook endpoint #{endpoint.pk} disabled: {options['reason']}",
        )

    def _enable(self, options) -> None:
        endpoint = self._endpoint(options["endpoint_id"])
        endpoints.endpoint_set_enabled(endpoint_id=endpoint.pk, enabled=True)
        self._emit(
            {"id": endpoint.pk, "enabled": True},
            f"webhook endpoint #{endpoint.pk} enabled (the failing mark is cleared)",
        )

    def _remove(self, options) -> None:
        endpoint_id = options["endpoint_id"]
        if not endpoints.endpoint_remove(endpoint_id=endpoint_id):
            raise CommandError(f"no webhook endpoint #{endpoint_id}")
        self._emit(
            {"id": endpoint_id, "removed": True},
            f"webhook endpoint #{endpoint_id} removed, with its delivery log",
        )

    def _reseal(self, options) -> None:
        count = endpoints.endpoint_reseal_all(adapters=self.adapters)
        self._emit(
            {"resealed": count},
            f"{count} endpoint(s) sealed again under the first of WEBHOOK_SECRET_KEYS: "
            "the other keys may go once every process runs with this list",
        )
