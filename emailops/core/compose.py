"""Turn (messageId, context) into a ready email: mapping → template (branded or default) → render.

Shared by the consumer and the console's preview, so both resolve and render exactly alike.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from inscriptis import get_text
from inscriptis.model.config import ParserConfig

from emailops.core.errors import TemplateNotFound, UnknownMessageId
from emailops.core.ports import (
    MappingStore,
    TemplateMapping,
    TemplateStore,
    custom_template_key,
    default_template_key,
)
from emailops.core.rendering import Renderer

__all__ = ["Composed", "Composer", "html_to_text", "subject_source_for"]

_TEXT_CONFIG = ParserConfig(display_links=True)


def html_to_text(html: str) -> str:
    """A readable plain-text alternative (links shown as ``text [url]``) for the text/plain part."""
    return get_text(html, _TEXT_CONFIG).strip() + "\n"


@dataclass(frozen=True)
class Composed:
    mapping: TemplateMapping
    template_key: str  # the S3 key actually used
    subject: str
    html: str
    text: str
    missing: tuple[str, ...]  # context variables the templates used but the context lacked
    template_version: str = ""  # the published version of template_key (journal TemplateVersion)
    # The template source rendered, so one recipient's copy can be rendered again with its own
    # variables (``Composer.personalise``) without another read of the store.
    source: str = field(default="", repr=False, compare=False)


def _overrides_subject(context: dict[str, Any]) -> bool:
    override = context.get("subject")
    return isinstance(override, str) and bool(override)


def subject_source_for(mapping: TemplateMapping, context: dict[str, Any]) -> str:
    """The subject template: a non-empty string ``context.subject`` overrides the mapping's."""
    return context["subject"] if _overrides_subject(context) else mapping.subject


class Composer:
    def __init__(self, *, mappings: MappingStore, templates: TemplateStore, renderer: Renderer):
        self.mappings = mappings
        self.templates = templates
        self.renderer = renderer

    def mapping_for(self, message_id: str) -> TemplateMapping:
        mapping = self.mappings.get_mapping(message_id)
        if mapping is None:
            raise UnknownMessageId(
                "look up template mapping",
                key=message_id,
                reason="no such messageId in the templates table",
            )
        return mapping

    def template_for(self, template_file: str, organization_id: str | None) -> tuple[str, str]:
        """(key, source): the organization's branded template if it has one, else the default."""
        key, source, _version = self.versioned_template_for(template_file, organization_id)
        return key, source

    def versioned_template_for(
        self, template_file: str, organization_id: str | None
    ) -> tuple[str, str, str]:
        """(key, source, version): as template_for, with the version the store says it read
        ("" when the store does not tell versions)."""
        if organization_id is not None:
            key = custom_template_key(organization_id, template_file)
            source, version = self._read(key)
            if source is not None:
                return key, source, version
        key = default_template_key(template_file)
        source, version = self._read(key)
        if source is None:
            raise TemplateNotFound("fetch template", key=key, reason="no such object in the bucket")
        return key, source, version

    def _read(self, key: str) -> tuple[str | None, str]:
        fetch = getattr(self.templates, "fetch_template", None)
        if fetch is None:
            return self.templates.read_template(key), ""
        result = fetch(key)
        return result.source, result.version

    def compose(
        self, message_id: str, context: dict[str, Any], organization_id: str | None
    ) -> Composed:
        mapping = self.mapping_for(message_id)
        key, source, version = self.versioned_template_for(mapping.template_file, organization_id)
        return self.compose_source(mapping, context, key=key, source=source, version=version)

    def compose_source(
        self,
        mapping: TemplateMapping,
        context: dict[str, Any],
        *,
        key: str,
        source: str,
        version: str = "",
    ) -> Composed:
        """Render a given template source (e.g. an older version of ``key``) as compose would."""
        message_id = mapping.message_id
        subject = self.renderer.render_subject(
            subject_source_for(mapping, context),
            context,
            name=f"subject of {message_id}",
            field="context.subject" if _overrides_subject(context) else "subject",
        )
        body = self.renderer.render_body(source, context, name=key)
        missing = tuple(dict.fromkeys(subject.missing + body.missing))
        return Composed(
            mapping=mapping,
            template_key=key,
            subject=subject.text,
            html=body.text,
            text=html_to_text(body.text),
            missing=missing,
            template_version=version,
            source=source,
        )

    def personalise(self, composed: Composed, context: dict[str, Any]) -> Composed:
        """``composed`` rendered again with one recipient's ``context`` (its unsubscribe link)."""
        source = composed.source
        if not source:
            source, _version = self._read(composed.template_key)
            if source is None:
                raise TemplateNotFound(
                    "fetch template", key=composed.template_key, reason="no such object"
                )
        return self.compose_source(
            composed.mapping,
            context,
            key=composed.template_key,
            source=source,
            version=composed.template_version,
        )
