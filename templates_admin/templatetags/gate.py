"""``{{ html|dark_preview }}`` and ``{{ html|inverted_preview }}``: a render as dark mode shows it
(emailops.core.template_dark_preview), for the draft page's dark previews."""

from __future__ import annotations

from django import template

from emailops.core.template_dark_preview import forced_inversion, prefers_dark

register = template.Library()


@register.filter
def dark_preview(html: str | None) -> str:
    return prefers_dark(html or "")


@register.filter
def inverted_preview(html: str | None) -> str:
    return forced_inversion(html or "")
