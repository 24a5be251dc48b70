"""Operations pages under /admin/templates_admin/operationspage/ (the job list is the changelist)."""

from __future__ import annotations

from functools import partial

from django.urls import URLPattern, path

from templates_admin.jobs import views


def admin_urls(admin_site) -> list[URLPattern]:
    def page(view):
        return admin_site.admin_view(partial(view, admin_site=admin_site))

    name = "templates_admin_jobs_"
    return [
        path("dlq/", page(views.dead_letters), name=f"{name}dlq"),
        path("bulk-resend/", page(views.bulk_resend), name=f"{name}bulk_resend"),
        path("template-check/", page(views.template_check), name=f"{name}template_check"),
        path("erase-recipient/", page(views.erase_recipient), name=f"{name}erase_recipient"),
        path("webhook-replay/", page(views.webhook_replay), name=f"{name}webhook_replay"),
        path("job/<int:pk>/", page(views.job), name=f"{name}job"),
        path("job/<int:pk>/progress/", page(views.job_progress), name=f"{name}job_progress"),
        path("job/<int:pk>/retry/", page(views.job_retry), name=f"{name}job_retry"),
    ]
