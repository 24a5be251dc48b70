"""Admin entries for the console. The placeholder models' changelists route to custom views
(the django-rq dashboard pattern); each feature package supplies its pages:

- ``templates_admin.mappings``: ``admin_urls(admin_site)`` and ``changelist(request, admin_site)``
- ``templates_admin.journal`` and ``templates_admin.suppression``: the same two names.
- ``templates_admin.jobs``: the same two names (operations run as Celery jobs).
- ``templates_admin.webhooks.pages``: the same two names (webhook endpoints, admins only).

The admin index is the operations dashboard (``templates_admin.dashboard``): charts of the
reputation counters, the reputation guard's banner and pauses, and the banner when Celery beat last
found the dead-letter queue non-empty.
"""

from __future__ import annotations

import importlib
from types import ModuleType

from django.contrib import admin
from django.http import Http404
from django.urls import path, re_path

from audit.reads import read_by_console
from templates_admin import roles
from templates_admin.console import refused_page
from templates_admin.models import (
    CategoryDefinition,
    EmailJournalPage,
    JournalReadAudit,
    OperationsPage,
    SuppressionListPage,
    TemplateMappingPage,
    WebhooksPage,
)


class ReadOnlyAdmin(admin.ModelAdmin):
    """Nobody adds, changes or deletes through the admin: the code writes these records."""

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False


class PlaceholderAdmin(ReadOnlyAdmin):
    """A model admin with no ORM pages: its changelist is a custom view, plus custom pages.

    ``view_permission`` decides who sees the index entry; every custom view checks its own.
    ``feature`` names the package with ``admin_urls()`` and ``changelist()``; it is imported on
    first use, because the features pull in the AWS adapters (the container).
    """

    view_permission = ""
    feature = ""
    # A package whose ``admin_urls()`` pages share this entry's prefix, mounted before the feature's.
    mounted_first = ""

    def has_view_permission(self, request, obj=None):
        return request.user.is_active and request.user.has_perm(self.view_permission)

    def has_module_permission(self, request):
        return self.has_view_permission(request)

    def feature_package(self) -> ModuleType:
        return importlib.import_module(self.feature)

    def get_urls(self):
        # Only the changelist of the default URLs: the add/change/history/delete views would query
        # the placeholder's table, which does not exist. Anything else under the model is a 404.
        name = f"{self.opts.app_label}_{self.opts.model_name}_changelist"
        changelist = path("", self.admin_site.admin_view(self.changelist_view), name=name)
        not_found = re_path(r"^.+$", self.admin_site.admin_view(_not_found))
        first = (
            importlib.import_module(self.mounted_first).admin_urls(self.admin_site)
            if self.mounted_first
            else []
        )
        feature = self.feature_package().admin_urls(self.admin_site)
        return [*first, *feature, changelist, not_found]

    def changelist_view(self, request, extra_context=None):
        return self.feature_package().changelist(request, admin_site=self.admin_site)


def _not_found(request, *args, **kwargs):
    raise Http404("No such console page")


@admin.register(TemplateMappingPage)
class TemplateMappingAdmin(PlaceholderAdmin):
    view_permission = roles.MANAGE_MAPPINGS
    feature = "templates_admin.mappings"
    # The draft pages live under the mappings' prefix, and come first: the bare mapping route
    # "mapping/<path:message_id>/" would swallow theirs. Composed here, so that drafts may use
    # mappings while mappings know nothing of drafts.
    mounted_first = "templates_admin.drafts.urls"


@admin.register(EmailJournalPage)
class EmailJournalAdmin(PlaceholderAdmin):
    view_permission = roles.SEARCH_JOURNAL
    feature = "templates_admin.journal"


@admin.register(SuppressionListPage)
class SuppressionListAdmin(PlaceholderAdmin):
    view_permission = roles.VIEW_SUPPRESSIONS
    feature = "templates_admin.suppression"


@admin.register(OperationsPage)
class OperationsAdmin(PlaceholderAdmin):
    view_permission = roles.VIEW_JOBS
    feature = "templates_admin.jobs"
    mounted_first = "templates_admin.dashboard.urls"


@admin.register(WebhooksPage)
class WebhooksAdmin(PlaceholderAdmin):
    view_permission = roles.MANAGE_WEBHOOKS
    feature = "templates_admin.webhooks.pages"


# The index is the operations dashboard (templates_admin/templates/templates_admin/index.html).
admin.site.index_template = admin.site.index_template or "templates_admin/index.html"


def _dashboard_index(request, extra_context=None):
    # Imported on first use, like the features: the dashboard pulls in the AWS adapters.
    from templates_admin.dashboard.views import index_view

    return index_view(admin.site, django_index)(request, extra_context)


# The default site's own index stays the rendering; the dashboard only adds its context (and the
# strict CSP). An instance attribute, because the site's URLs are built from ``site.index``.
django_index = admin.site.index
admin.site.index = _dashboard_index


@admin.register(JournalReadAudit)
class JournalReadAuditAdmin(ReadOnlyAdmin):
    """The read-only trail of journal reads (Support leads and superusers)."""

    list_display = ("at", "actor", "channel", "action", "query", "filters", "rows")
    list_filter = ("channel", "action")
    search_fields = ("actor", "query", "token_prefix")
    date_hierarchy = "at"
    list_select_related = ("user",)

    def get_exclude(self, request, obj=None):
        # ``actor`` names who read; the user field's link leads to a page only those who may see
        # console users can open (a Support lead met Django's bare 403 there).
        if request.user.has_perm("auth.view_user"):
            return super().get_exclude(request, obj)
        return ("user",)

    # Reading the trail is a read too: its queries name the addresses searched for.

    def changelist_view(self, request, extra_context=None):
        if not self.has_view_permission(request):
            return refused_page(request, self.admin_site, [roles.VIEW_READ_AUDIT])
        response = super().changelist_view(request, extra_context)
        shown = getattr(response, "context_data", None) or {}
        if "cl" in shown:
            rows = len(shown["cl"].result_list)
            read_by_console(request, "read-audit", request.GET.get("q", ""), rows=rows)
        return response

    def change_view(self, request, object_id, form_url="", extra_context=None):
        if not self.has_view_permission(request):
            return refused_page(request, self.admin_site, [roles.VIEW_READ_AUDIT])
        read_by_console(request, "read-audit", f"#{object_id}", rows=1)
        return super().change_view(request, object_id, form_url, extra_context)

    def history_view(self, request, object_id, extra_context=None):
        if not self.has_view_permission(request):
            return refused_page(request, self.admin_site, [roles.VIEW_READ_AUDIT])
        read_by_console(request, "read-audit", f"#{object_id}", rows=1)
        return super().history_view(request, object_id, extra_context)


@admin.register(CategoryDefinition)
class CategoryDefinitionAdmin(admin.ModelAdmin):
    """Email categories (docs/preferences.md): template owners add and relabel them; the mapping
    page puts a messageId in one. The slug is stored on mappings and preferences, so it is fixed
    once made; the admin's history keeps who changed a label. Deleting is left to superusers."""

    list_display = ("slug", "label", "description", "updated_at")
    search_fields = ("slug", "label")
    fields = ("slug", "label", "description")

    def get_readonly_fields(self, request, obj=None):
        return ("slug",) if obj is not None else ()
