"""Email categories, as every console area and the public preference page name them: a mapping's
``Category`` is a slug (``TemplateMapping.category``); its label and description are the console's
``CategoryDefinition`` rows (defined by template owners, under "Email categories" in the admin).

Shared (the bottom layer with ``display``, ``console`` and ``models``): the mappings, suppression,
dashboard and drafts areas all show labels, and none of them should import another for it.
``preference_store(adapters)`` is the one way the console reaches the recipients' preferences.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from templates_admin.models import CategoryDefinition

if TYPE_CHECKING:
    from emailops.container import Container

__all__ = ["category_choices", "category_label", "category_labels", "preference_store"]

UNCATEGORISED = "Uncategorised (transactional: never unsubscribable)"


def category_labels() -> dict[str, str]:
    """slug → label of every defined category (one query)."""
    return dict(CategoryDefinition.objects.values_list("slug", "label"))


def category_label(slug: str) -> str:
    """The category's label, or the slug itself when no definition has it (a mapping loaded
    from a file before its category was defined, a definition deleted since); "" for ""."""
    if not slug:
        return ""
    label = CategoryDefinition.objects.filter(slug=slug).values_list("label", flat=True).first()
    return label or slug


def category_choices(*, current: str = "") -> list[tuple[str, str]]:
    """The choices of a mapping's Category select: uncategorised first, then each definition;
    ``current`` stays choosable even when no definition has it (it is what is stored)."""
    labels = {slug: f"{label} ({slug})" for slug, label in category_labels().items()}
    if current and current not in labels:
        labels[current] = f"{current} (not defined in the console)"  # the slug once, not twice
    return [("", UNCATEGORISED), *sorted(labels.items())]


def preference_store(adapters: Container) -> Any | None:
    """The recipients' preferences (``emailops.core.preferences.PreferenceStore``, plus
    ``history(address)``) of ``adapters``, or None where this deployment has none: pages then say
    so instead of failing."""
    return getattr(adapters, "preference_store", None)
