"""Writes for the mapping pages. Mappings go to the templates table (the consumer's source of
truth) and every change is audited in the Django DB; test sends go on the request queue."""

from __future__ import annotations

import re
import uuid
from dataclasses import asdict, replace
from typing import TYPE_CHECKING, Any

from django.contrib.auth.models import AbstractBaseUser
from django.core.exceptions import ValidationError
from django.core.validators import validate_slug
from django.db import transaction
from django.utils import timezone

from emailops.core.contract import (
    EmailRequest,
    Recipient,
    parse_complete_request,
    request_to_json,
)
from emailops.core.dedupe import dedupe_key
from emailops.core.errors import ConcurrentUpdate, InvalidRequest, TemplateError
from emailops.core.ports import TemplateMapping, default_template_key
from emailops.core.reputation import Priority
from templates_admin.models import CategoryDefinition, EmailAction, MappingChange

if TYPE_CHECKING:
    from emailops.aws.mappings import DynamoMappingStore
    from emailops.aws.s3 import S3TemplateStore
    from emailops.aws.sqs import SqsQueue
    from emailops.container import Container
    from emailops.core.rendering import Renderer

# A bare file name: it becomes part of an S3 key, so no folders and no "..".
_TEMPLATE_FILE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
MAX_ID_LENGTH = 200  # MappingChange.message_id / EmailAction.message_id


def mapping_validate(
    *,
    template_file: str,
    subject: str,
    template_store: S3TemplateStore,
    renderer: Renderer,
    message_id: str | None = None,
) -> None:
    """Raise ValidationError (keyed by field) unless the mapping would work for the consumer."""
    errors: dict[str, list[str]] = {}
    if message_id is not None:
        try:
            validate_slug(message_id)
            if len(message_id) > MAX_ID_LENGTH:
                raise ValidationError(f"Use at most {MAX_ID_LENGTH} characters.")
        except ValidationError as exc:
            errors["message_id"] = exc.messages
    if not _TEMPLATE_FILE.match(template_file):
        errors["template_file"] = ["Give a file name such as welcome.html (no folders)."]
    elif template_store.read_template(default_template_key(template_file)) is None:
        errors["template_file"] = [
            f"There is no {default_template_key(template_file)} in the templates bucket; "
            "upload the default template first."
        ]
    if not subject.strip():
        errors["subject"] = ["The subject cannot be empty."]
    elif "\n" in subject or "\r" in subject:
        errors["subject"] = ["The subject must be one line."]
    else:
        try:
            renderer.check(subject, html=False, name="subject")
        except TemplateError as exc:
            errors["subject"] = [f"The subject does not compile: {exc.reason}"]
    if errors:
        raise ValidationError(errors)


def _snapshot(mapping: TemplateMapping | None) -> dict[str, Any] | None:
    return asdict(mapping) if mapping else None


def _stamped(mapping: TemplateMapping, user: AbstractBaseUser) -> TemplateMapping:
    # version 0: the store numbers the write (the expected version is passed beside it).
    return replace(
        mapping,
        version=0,
        updated_by=user.get_username(),
        updated_at=timezone.now().isoformat(timespec="seconds"),
    )


def _audited_save(
    mapping: TemplateMapping,
    *,
    user: AbstractBaseUser,
    mapping_store: DynamoMappingStore,
    before: TemplateMapping | None = None,
    expected_version: int | None = None,
) -> TemplateMapping:
    """Save ``mapping`` over ``before`` as last seen at ``expected_version``, or as a new one
    (both None: the write fails if it exists), with its entry in the trail."""
    # The audit row is written first and commits only if the DynamoDB write succeeds (a failed
    # write raises and rolls it back), so the trail never records a change that did not happen.
    with transaction.atomic():
        change = MappingChange.objects.create(
            message_id=mapping.message_id,
            action=MappingChange.Action.CREATE if before is None else MappingChange.Action.UPDATE,
            user=user,
            before=_snapshot(before),
        )
        saved = mapping_store.save_mapping(
            _stamped(mapping, user), expected_version=expected_version
        )
        change.after = _snapshot(saved)
        change.save(update_fields=["after"])
    return saved


def _priority(value: str | None, current: str = Priority.NORMAL.value) -> str:
    if value is None:
        return current
    if value not in {p.value for p in Priority}:
        raise ValidationError({"priority": ["Choose critical, normal or bulk."]})
    return value


def _category(value: str | None, current: str = "") -> str:
    """The category to store: "" (uncategorised), a defined one, or the stored one kept."""
    if value is None:
        return current
    value = value.strip()
    if value and value != current and not CategoryDefinition.objects.filter(slug=value).exists():
        raise ValidationError(
            {"category": [f"No category {value!r} is defined: add it under Email categories."]}
        )
    return value


def mapping_create(
    *,
    message_id: str,
    template_file: str,
    subject: str,
    user: AbstractBaseUser,
    adapters: Container,
    priority: str | None = None,
    category: str | None = None,
) -> TemplateMapping:
    """Raises ValidationError, or ConcurrentUpdate (with ``.current``) if it already exists."""
    mapping_validate(
        message_id=message_id,
        template_file=template_file,
        subject=subject,
        template_store=adapters.template_store,
        renderer=adapters.renderer,
    )
    mapping = TemplateMapping(
        message_id=message_id,
        template_file=template_file,
        subject=subject,
        priority=_priority(priority),
        category=_category(category),
    )
    return _audited_save(mapping, user=user, mapping_store=adapters.mapping_store)


def _current_or_conflict(message_id: str, mapping_store: DynamoMappingStore) -> TemplateMapping:
    current = mapping_store.get_mapping(message_id)
    if current is None:
        raise ConcurrentUpdate(
            "save template mapping", key=message_id, reason="it was deleted since you opened it"
        )
    return current


def mapping_update(
    *,
    message_id: str,
    template_file: str,
    subject: str,
    expected_version: int,
    user: AbstractBaseUser,
    adapters: Container,
    priority: str | None = None,
    send_disabled: bool | None = None,
    category: str | None = None,
) -> TemplateMapping:
    """Replace the mapping last seen at ``expected_version``; a save that changes nothing writes
    nothing. Raises ValidationError, or ConcurrentUpdate if someone else changed it meanwhile.
    ``priority``, ``send_disabled`` (sending off: log-only, obeyed by the Go service too) and
    ``category`` (what recipients may unsubscribe from; "" = uncategorised) None keep the
    current ones. A critical mapping may have a category: it is never held by a preference."""
    mapping_validate(
        template_file=template_file,
        subject=subject,
        template_store=adapters.template_store,
        renderer=adapters.renderer,
    )
    current = _current_or_conflict(message_id, adapters.mapping_store)
    priority = _priority(priority, current.priority)
    send_disabled = current.send_disabled if send_disabled is None else send_disabled
    category = _category(category, current.category)
    unchanged = (
        current.template_file,
        current.subject,
        current.priority,
        current.send_disabled,
        current.category,
    ) == (
        template_file,
        subject,
        priority,
        send_disabled,
        category,
    )
    if unchanged and current.version == expected_version:
        return current
    mapping = TemplateMapping(
        message_id=message_id,
        template_file=template_file,
        subject=subject,
        priority=priority,
        send_disabled=send_disabled,
        category=category,
    )
    return _audited_save(
        mapping,
        user=user,
        mapping_store=adapters.mapping_store,
        before=current,
        expected_version=expected_version,
    )


def mapping_delete(
    *,
    message_id: str,
    expected_version: int,
    user: AbstractBaseUser,
    mapping_store: DynamoMappingStore,
) -> TemplateMapping:
    """Delete the mapping last seen at ``expected_version`` and return what was deleted; raises
    ConcurrentUpdate otherwise."""
    current = _current_or_conflict(message_id, mapping_store)
    with transaction.atomic():  # as in _audited_save: no trail entry unless the delete happened
        MappingChange.objects.create(
            message_id=message_id,
            action=MappingChange.Action.DELETE,
            user=user,
            before=_snapshot(current),
        )
        mapping_store.delete_mapping(message_id, expected_version=expected_version)
    return current


def send_test_email(
    *, message_id: str, context: dict[str, Any], user: AbstractBaseUser, queue: SqsQueue
) -> EmailAction:
    """Queue a real request for ``message_id`` to the user's own address, through the normal
    contract with a fresh dedupeId, and audit it. Raises ValidationError when it cannot."""
    email = (getattr(user, "email", "") or "").strip()
    if not email:
        raise ValidationError(
            "Your account has no email address, so there is nowhere to send a test. "
            "Ask an administrator to add one to your user."
        )
    name = user.get_full_name() if hasattr(user, "get_full_name") else ""
    request = EmailRequest(
        message_id=message_id,
        recipients=(Recipient(email=email, name=name),),
        context=context,
        dedupe_id=f"test-{uuid.uuid4()}",
    )
    body = request_to_json(request)
    try:
        # What the consumer checks first; a fallback (e.g. to the default template) would not
        # test what the owner meant either.
        parse_complete_request(body)
    except InvalidRequest as exc:
        raise ValidationError(f"The consumer would not send this as it is: {exc.reason}") from None
    with transaction.atomic():  # as in _audited_save: audited if and only if it was queued
        action = EmailAction.objects.create(
            kind=EmailAction.Kind.SEND_TEST,
            user=user,
            message_id=message_id,
            recipient=email,
            dedupe_id=request.dedupe_id,
            journal_key=dedupe_key(request, email),
        )
        action.sqs_message_id = queue.send(body)
        action.save(update_fields=["sqs_message_id"])
    return action
