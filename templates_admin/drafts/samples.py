"""What a draft's check and its preview both need: the variables a source reads and the sample
context a render is given. Its own module so that the check may use the preview, one way."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from emailops.core.errors import EmailOpsError
from templates_admin.mappings.variables import sample_context, template_manifest

if TYPE_CHECKING:
    from emailops.container import Container
    from emailops.core.rendering import Renderer

__all__ = ["sample_context_for", "variables_of"]


def variables_of(source: str, *, name: str, renderer: Renderer) -> set[str]:
    try:
        return renderer.variables(source, name=name)
    except EmailOpsError:
        return set()  # a source that does not compile is reported as an error already


def sample_context_for(
    *, message_id: str, sources: Mapping[str, str], subject: str | None, adapters: Container
) -> dict[str, Any]:
    """The manifest's sample values for ``message_id``; without a manifest entry, a sample for
    every variable the sources and the subject read."""
    names = template_manifest(adapters=adapters).get(message_id) if message_id else None
    if names is None:
        renderer = adapters.renderer
        names = set().union(
            *(variables_of(s, name=k, renderer=renderer) for k, s in sources.items()), set()
        )
        if subject:
            names |= variables_of(subject, name="subject", renderer=renderer)
    return sample_context(names, sources=[*sources.values(), subject or ""])
