"""Copy a suppression table in our old shape (key ``Address``) into one in the shape shared with
the Go service (key ``Email``): ``manage.py migrate_suppression_table --to <new table>``.

Idempotent and lossless: every item is copied (a row the target holds already is left as it is,
so a rerun, or a row a consumer wrote to the target meanwhile, is never overwritten), with
``Reason`` in the shared words (``BOUNCE`` → ``bounce``), ``CreatedAt`` as RFC 3339 text and every
other attribute kept as it was. The source table is only read. Removal records are not in the table
(they are the console's ``SuppressionRemoval`` rows, keyed by address): they need no copy.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from botocore.exceptions import ClientError

from emailops.aws import provision
from emailops.aws.dynamo import conditional_call, table_call, text_attribute
from emailops.aws.suppression import EMAIL_KEY, OLD_KEY, REASONS, created_at_epoch, new_shape_item

__all__ = ["MigrationResult", "suppression_table_migrate"]

_REWRITTEN = {EMAIL_KEY, OLD_KEY, "Reason", "CreatedAt", "Detail", "Source"}


@dataclass(frozen=True)
class MigrationResult:
    read: int  # items in the source table
    copied: int  # written to the target by this run
    present: int  # the target held them already (an earlier run, or a consumer's write)


def _target_item(item: dict[str, Any]) -> dict[str, Any]:
    email = text_attribute(item, OLD_KEY) or text_attribute(item, EMAIL_KEY)
    reason = text_attribute(item, "Reason").lower()
    target = new_shape_item(
        email,
        reason=reason if reason in REASONS else "manual",
        detail=text_attribute(item, "Detail"),
        source=text_attribute(item, "Source"),
        now=created_at_epoch(item),
    )
    if reason and reason not in REASONS:  # an unknown word is kept, not lost
        target["Reason"] = {"S": reason}
    if "CreatedAt" not in item:
        del target["CreatedAt"]
    target.update({k: v for k, v in item.items() if k not in _REWRITTEN})
    return target


def suppression_table_migrate(
    client: Any, *, source: str, target: str, report: provision.Report
) -> MigrationResult:
    """Copy every item of ``source`` into ``target`` (created in the shared shape if missing)."""
    if source == target:
        raise ValueError("the target must be another table: DynamoDB cannot change a table's key")
    lines: list[str] = []
    provision.ensure_suppression_table(client, target, lines.append)
    for line in lines:
        report(line)
    if any("old key schema" in line for line in lines):
        raise ValueError(f"{target} is not keyed by Email: name a new table")
    read = copied = present = 0
    kwargs: dict[str, Any] = {"ConsistentRead": True}
    while True:
        page = table_call(client, source, "scan", "read suppressions to migrate", "*", **kwargs)
        for item in page.get("Items", []):
            read += 1
            row = _target_item(item)
            written = conditional_call(
                client,
                target,
                "put_item",
                "copy suppression",
                row[EMAIL_KEY]["S"],
                Item=row,
                ConditionExpression="attribute_not_exists(#k)",
                ExpressionAttributeNames={"#k": EMAIL_KEY},
            )
            if isinstance(written, ClientError):
                present += 1
            else:
                copied += 1
        last = page.get("LastEvaluatedKey")
        if not last:
            break
        kwargs["ExclusiveStartKey"] = last
    return MigrationResult(read=read, copied=copied, present=present)
