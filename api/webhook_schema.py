"""The delivery webhooks' payload as JSON Schema, generated from its type
(``emailops.core.webhook_payload.WebhookPayload``) with pydantic: the committed
docs/webhooks.schema.json, and the OpenAPI document's ``webhooks`` (api/endpoints.py).

    python -m api.webhook_schema [--check] [--output PATH]

``--check`` exits 1 when the committed file is not what the type makes (CI fails on drift).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Annotated, Any

from pydantic import ConfigDict, Field, TypeAdapter
from pydantic.json_schema import GenerateJsonSchema
from typing_extensions import is_typeddict

from emailops.core import webhook_payload
from emailops.core.webhook_payload import PAYLOAD_TYPES, WebhookPayload
from emailops.core.webhooks import EVENT_TYPES

__all__ = [
    "OUTPUT",
    "SIGNATURE_HEADERS",
    "main",
    "openapi_webhooks",
    "payload_schema",
    "render",
]

OUTPUT = Path(__file__).resolve().parents[1] / "docs" / "webhooks.schema.json"
SCHEMA_ID = "https://emailops.invalid/docs/webhooks.schema.json"
DEFS_TEMPLATE = "#/$defs/{model}"

# The Standard Webhooks headers every delivery carries (emailops.core.webhook_delivery.sign).
SIGNATURE_HEADERS = {
    "webhook-id": "The event's id (evt_...): the same on every retry and replay of this event; "
    "dedupe on it.",
    "webhook-timestamp": "When this attempt was signed, in seconds since the epoch; refuse ones "
    "too far from your clock (the libraries allow 5 minutes).",
    "webhook-signature": "Space-separated `v1,<base64 HMAC-SHA256>` signatures of "
    "`<webhook-id>.<webhook-timestamp>.<body>`, one per signing secret (two during a rotation's "
    "overlap); one must verify.",
}

_CONFIG = ConfigDict(use_attribute_docstrings=True)


class _NoFieldTitles(GenerateJsonSchema):
    """No ``title`` per property ("Journalkey"): the property's name says it."""

    def field_title_should_be_set(self, schema) -> bool:
        return False


def _adapter(kind: Any) -> TypeAdapter:
    return TypeAdapter(kind, config=_CONFIG)


def _own_descriptions(kind: type) -> dict[str, str]:
    # (A TypedDict takes no TypeAdapter config of its own: a list of one does.)
    listed = _adapter(list[kind]).json_schema(schema_generator=_NoFieldTitles)
    properties = listed["$defs"][kind.__name__]["properties"]
    return {name: p["description"] for name, p in properties.items() if "description" in p}


def _ancestors(kind: type) -> list[type]:
    found = []
    for base in getattr(kind, "__orig_bases__", ()):
        if is_typeddict(base):
            found += [base, *_ancestors(base)]
    return found


def _fill_inherited_descriptions(definitions: dict[str, Any]) -> None:
    """pydantic reads a field's docstring only in the class that declares it: an inherited
    field (``WebhookData``'s, in every event's data) gets the nearest ancestor's."""
    for name, definition in definitions.items():
        kind = getattr(webhook_payload, name, None)
        if kind is None or not is_typeddict(kind):
            continue
        for ancestor in _ancestors(kind):  # the nearest first: its text wins
            for field_name, text in _own_descriptions(ancestor).items():
                prop = definition.get("properties", {}).get(field_name)
                if prop is not None:
                    prop.setdefault("description", text)


def payload_schema(*, ref_template: str = DEFS_TEMPLATE) -> dict[str, Any]:
    """The payload's schema (a ``oneOf`` told apart by ``type``), its definitions under
    ``$defs`` (refs made with ``ref_template``)."""
    kind = Annotated[WebhookPayload, Field(discriminator="type")]
    schema = _adapter(kind).json_schema(ref_template=ref_template, schema_generator=_NoFieldTitles)
    _fill_inherited_descriptions(schema.get("$defs", {}))
    return schema


def render() -> str:
    """docs/webhooks.schema.json's text."""
    schema = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": SCHEMA_ID,
        "title": "emailops delivery webhook payload",
        "description": "The JSON body POSTed to a webhook endpoint (docs/webhooks.md), generated "
        "from emailops.core.webhook_payload.WebhookPayload by `python -m api.webhook_schema`. New "
        "properties may be added: ignore the ones you do not know.",
        **payload_schema(),
    }
    return json.dumps(schema, indent=2, ensure_ascii=False) + "\n"


def openapi_webhooks(ref_template: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """(the OpenAPI 3.1 ``webhooks`` object: one POST per event type with its payload and the
    three signature headers, the component schemas it refers to)."""
    schema = payload_schema(ref_template=ref_template)
    components = schema.pop("$defs", {})
    parameters = [
        {
            "in": "header",
            "name": name,
            "required": True,
            "description": text,
            "schema": {"type": "string"},
        }
        for name, text in SIGNATURE_HEADERS.items()
    ]
    webhooks = {}
    for event_type in EVENT_TYPES:
        model = PAYLOAD_TYPES[event_type].__name__
        description = components[model].get("description", "")
        webhooks[event_type] = {
            "post": {
                "summary": f"{event_type}: {description}",
                "description": "Signed per Standard Webhooks (docs/webhooks.md). Answer 2xx "
                "quickly; 429, 5xx and timeouts are retried with back-off for about three "
                "days, other 4xx are not, 410 disables the endpoint.",
                "operationId": "webhook_" + event_type.replace(".", "_"),
                "tags": ["webhooks"],
                "security": [],
                "parameters": parameters,
                "requestBody": {
                    "required": True,
                    "content": {
                        "application/json": {"schema": {"$ref": ref_template.format(model=model)}}
                    },
                },
                "responses": {
                    "200": {"description": "Received (any 2xx will do)."},
                    "410": {"description": "Gone: the endpoint is disabled, nothing more is sent."},
                },
            }
        }
    return webhooks, components


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m api.webhook_schema", description=__doc__)
    parser.add_argument("--output", type=Path, default=OUTPUT)
    parser.add_argument("--check", action="store_true", help="exit 1 if the file is out of date")
    args = parser.parse_args(argv)
    text = render()
    if args.check:
        current = args.output.read_text(encoding="utf-8") if args.output.exists() else ""
        if current != text:
            print(f"{args.output} is out of date: run python -m api.webhook_schema")
            return 1
        return 0
    args.output.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
