"""The templates table (``TEMPLATES_TABLE``, ``email-message-templates``): messageId → template.

The consumer reads it with a consistent GetItem; the console lists, creates, edits and deletes rows.
Edits are optimistic: each write carries the ``Version`` the editor saw, checked by the write itself,
so two people editing one mapping cannot silently overwrite each other.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from emailops.aws.clients import translate_error
from emailops.aws.dynamo import conditional_call, get_item, number_attribute, text_attribute
from emailops.core.errors import ConcurrentUpdate
from emailops.core.ports import TemplateMapping
from emailops.core.reputation import parse_priority

__all__ = ["DynamoMappingStore"]


def _mapping(item: dict[str, Any]) -> TemplateMapping:
    return TemplateMapping(
        message_id=text_attribute(item, "MessageId"),
        template_file=text_attribute(item, "TemplateFile"),
        subject=text_attribute(item, "Subject"),
        version=number_attribute(item, "Version"),
        updated_by=text_attribute(item, "UpdatedBy"),
        updated_at=text_attribute(item, "UpdatedAt"),
        priority=parse_priority(text_attribute(item, "Priority")).value,
        send_disabled=item.get("SendDisabled", {}).get("BOOL") is True,
        category=text_attribute(item, "Category"),
    )


class DynamoMappingStore:
    def __init__(self, client: Any, table: str) -> None:
        self.client = client
        self.table = table

    def get_mapping(self, message_id: str) -> TemplateMapping | None:
        item = get_item(
            self.client, self.table, "MessageId", message_id, what="look up template mapping"
        )
        return _mapping(item) if item else None

    def list_mappings(self) -> list[TemplateMapping]:
        """Every mapping, sorted by messageId (the table holds dozens of rows, not millions)."""
        mappings = []
        try:
            for page in self.client.get_paginator("scan").paginate(TableName=self.table):
                mappings += [_mapping(item) for item in page.get("Items", [])]
        except (ClientError, BotoCoreError) as exc:
            raise translate_error(exc, "list template mappings", key=self.table) from exc
        return sorted(mappings, key=lambda m: m.message_id)

    def save_mapping(
        self, mapping: TemplateMapping, *, expected_version: int | None
    ) -> TemplateMapping:
        """Create (``expected_version=None``) or replace the row last seen at ``expected_version``.

        Returns the stored mapping with its new version; raises ConcurrentUpdate, carrying the
        current row, when the row is not as the caller saw it.
        """
        saved = replace(mapping, version=(expected_version or 0) + 1)
        item = {
            "MessageId": {"S": saved.message_id},
            "TemplateFile": {"S": saved.template_file},
            "Subject": {"S": saved.subject},
            "Version": {"N": str(saved.version)},
            "UpdatedBy": {"S": saved.updated_by},
            "UpdatedAt": {"S": saved.updated_at},
            "Priority": {"S": parse_priority(saved.priority).value},
        }
        item |= {"SendDisabled": {"BOOL": True}} if saved.send_disabled else {}
        item |= {"Category": {"S": saved.category}} if saved.category else {}
        self._conditional("put_item", mapping.message_id, expected_version, Item=item)
        return saved

    def delete_mapping(self, message_id: str, *, expected_version: int) -> None:
        self._conditional(
            "delete_item", message_id, expected_version, Key={"MessageId": {"S": message_id}}
        )

    def _conditional(
        self, operation: str, message_id: str, expected: int | None, **kwargs: Any
    ) -> None:
        if expected is None:
            condition, values = "attribute_not_exists(MessageId)", {}
        elif expected == 0:  # rows written by hand (or by the Go tooling) carry no Version
            condition, values = "attribute_exists(MessageId) AND attribute_not_exists(Version)", {}
        else:
            condition, values = "Version = :v", {":v": {"N": str(expected)}}
        written = conditional_call(
            self.client,
            self.table,
            operation,
            f"{operation} template mapping",
            message_id,
            ConditionExpression=condition,
            ReturnValuesOnConditionCheckFailure="ALL_OLD",
            **({"ExpressionAttributeValues": values} if values else {}),
            **kwargs,
        )
        if isinstance(written, ClientError):
            old = written.response.get("Item")
            current = _mapping(old) if old else self.get_mapping(message_id)
            reason = (
                "it already exists"
                if expected is None and current
                else "it was deleted since you opened it"
                if current is None
                else f"it was changed since you opened it (now version {current.version}"
                f"{', by ' + current.updated_by if current.updated_by else ''})"
            )
            raise ConcurrentUpdate(
                "save template mapping", key=message_id, reason=reason, current=current
            ) from None
