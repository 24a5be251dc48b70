"""``{{ value|console_time }}``: one way to write a moment on every console page,
"2026-12-08 01:02:03 UTC" (the console's zone named), whether it is a datetime, an ISO 8601 text
as Redis and DynamoDB keep them ("2026-12-08T01:02:03Z"), or epoch seconds."""

from __future__ import annotations

from datetime import UTC, datetime

from django import template

from templates_admin.display import local_text

register = template.Library()


@register.filter
def console_time(value: object) -> str:
    if value in (None, ""):
        return ""
    if isinstance(value, datetime):
        moment = value if value.tzinfo else value.replace(tzinfo=UTC)
        return local_text(moment.timestamp())
    if isinstance(value, int | float) and not isinstance(value, bool):
        return local_text(value)
    text = str(value)
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return text  # not a time: shown as it is
    return console_time(moment)
