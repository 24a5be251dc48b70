"""Small DynamoDB reads shared by the table adapters (templates, suppression, journal).

Items stay in DynamoDB's wire form (``{"S": ...}``, ``{"N": ...}``) here; each adapter turns them
into its own type.
"""

from __future__ import annotations

from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from emailops.aws.clients import error_code, translate_error

__all__ = [
    "conditional_call",
    "get_item",
    "number_attribute",
    "table_call",
    "text_attribute",
    "transact_conditional",
]

# A cancelled transaction says why per item (CancellationReasons[].Code); each is answered as
# the same error the single-item call would have raised, so callers see one set of errors.
_CANCELLATION_CODES = {
    "ConditionalCheckFailed": "ConditionalCheckFailedException",
    "TransactionConflict": "TransactionConflictException",
    "ProvisionedThroughputExceeded": "ProvisionedThroughputExceededException",
    "ThrottlingError": "ThrottlingException",
    "ItemCollectionSizeLimitExceeded": "ItemCollectionSizeLimitExceededException",
    "ValidationError": "ValidationException",
}


def table_call(client: Any, table: str, operation: str, what: str, key: str, **kwargs: Any) -> Any:
    """``client.<operation>(TableName=table, **kwargs)``; AWS errors are raised as core errors
    saying ``what`` failed for ``key``."""
    try:
        return getattr(client, operation)(TableName=table, **kwargs)
    except (ClientError, BotoCoreError) as exc:
        raise translate_error(exc, what, key=key) from exc


def conditional_call(
    client: Any, table: str, operation: str, what: str, key: str, **kwargs: Any
) -> dict[str, Any] | ClientError:
    """``table_call`` for a conditional write: the answer, or the ``ClientError`` itself (not
    raised) when the condition failed, for the caller to word or to read the item it returns."""
    try:
        return getattr(client, operation)(TableName=table, **kwargs)
    except ClientError as exc:
        if error_code(exc) == "ConditionalCheckFailedException":
            return exc
        raise translate_error(exc, what, key=key) from exc
    except BotoCoreError as exc:
        raise translate_error(exc, what, key=key) from exc


def transact_conditional(
    client: Any, items: list[dict[str, Any]], what: str, key: str
) -> dict[str, Any] | ClientError:
    """``TransactWriteItems`` of ``items`` (all or none), answered as ``conditional_call`` answers:
    the response, or a ``ConditionalCheckFailedException`` ClientError (not raised, carrying the
    failed item's ``Item`` when it was asked for) when a condition failed. Any other
    cancellation is raised as the core error its single-item code maps to."""
    try:
        return client.transact_write_items(TransactItems=items)
    except ClientError as exc:
        if error_code(exc) != "TransactionCanceledException":
            raise translate_error(exc, what, key=key) from exc
        reasons = [r for r in exc.response.get("CancellationReasons") or [] if r.get("Code")]
        reasons = [r for r in reasons if r["Code"] != "None"]
        failed = next((r for r in reasons if r["Code"] == "ConditionalCheckFailed"), None)
        if failed is not None:
            response = {"Error": {"Code": "ConditionalCheckFailedException", "Message": ""}}
            if failed.get("Item"):
                response["Item"] = failed["Item"]
            return ClientError(response, "TransactWriteItems")
        first = reasons[0] if reasons else {"Code": "TransactionCanceled", "Message": str(exc)}
        code = _CANCELLATION_CODES.get(first["Code"], first["Code"])
        mapped = ClientError(
            {"Error": {"Code": code, "Message": first.get("Message", "")}}, "TransactWriteItems"
        )
        raise translate_error(mapped, what, key=key) from exc
    except BotoCoreError as exc:
        raise translate_error(exc, what, key=key) from exc


def get_item(
    client: Any, table: str, key_name: str, key: str, *, what: str
) -> dict[str, Any] | None:
    """The item whose string key ``key_name`` is ``key``, read consistently, or None."""
    item = table_call(
        client, table, "get_item", what, key, Key={key_name: {"S": key}}, ConsistentRead=True
    ).get("Item")
    return item or None


def text_attribute(item: dict[str, Any], name: str) -> str:
    """A string attribute; "" when the item has none (rows written before the attribute existed)."""
    return item.get(name, {}).get("S", "")


def number_attribute(item: dict[str, Any], name: str) -> int:
    """A whole-number attribute; 0 when the item has none."""
    return int(item.get(name, {}).get("N", "0"))
