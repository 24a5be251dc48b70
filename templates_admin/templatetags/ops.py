"""{% ops_banner %}: the admin index's alert when beat's last reading found dead letters or
stuck claims (shown to those who may see operations)."""

from __future__ import annotations

from typing import Any

from django import template
from django.urls import reverse

from templates_admin import roles
from templates_admin.jobs.selectors import ops_readings

register = template.Library()


@register.inclusion_tag("templates_admin/jobs/_banner.html", takes_context=True)
def ops_banner(context: dict[str, Any]) -> dict[str, Any]:
    request = context.get("request")
    if request is None or not request.user.has_perm(roles.VIEW_JOBS):
        return {"show": False}
    readings = ops_readings()
    dlq, stuck = readings["dlq"], readings["stuck"]
    depth = (dlq.value or {}).get("depth", 0) if dlq else 0
    stuck_count = (stuck.value or {}).get("count", 0) if stuck else 0
    index = reverse("admin:templates_admin_operationspage_changelist")
    return {
        "show": bool(depth or stuck_count),
        "depth": depth,
        "dlq_at": dlq.at if dlq else None,
        "stuck": stuck_count,
        "stuck_at": stuck.at if stuck else None,
        "dlq_url": reverse("admin:templates_admin_jobs_dlq"),
        "can_redrive": request.user.has_perm(roles.REDRIVE_DEAD_LETTERS),
        "index_url": index,
    }
