"""Admin pages: API tokens (superusers: create, list, revoke) and the journal-read audit trail
(read-only; Support leads and superusers)."""

from __future__ import annotations

from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import get_object_or_404
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.views.decorators.http import require_POST

from api import services
from api.models import ApiToken


@admin.register(ApiToken)
class ApiTokenAdmin(admin.ModelAdmin):
    list_display = (
        "name",
        "prefix",
        "active",
        "emails_per_minute",
        "created_by",
        "created_at",
        "last_used_at",
        "revoked_at",
    )
    list_filter = ("revoked_at",)
    search_fields = ("name", "prefix")
    actions = ["revoke_selected"]
    change_form_template = "admin/api/apitoken/change_form.html"

    def get_fields(self, request, obj=None):
        if obj is None:
            return ("name", "emails_per_minute")
        return (
            "name",
            "prefix",
            "emails_per_minute",
            "created_by",
            "created_at",
            "last_used_at",
            "revoked_at",
        )

    def get_readonly_fields(self, request, obj=None):
        if obj is None:
            return ()
        return ("prefix", "created_by", "created_at", "last_used_at", "revoked_at")

    @admin.display(boolean=True)
    def active(self, obj: ApiToken) -> bool:
        return obj.active

    def has_delete_permission(self, request, obj=None):
        return False  # revoke instead: the audit trail keeps pointing at the token

    def save_model(self, request, obj, form, change):
        if change:
            super().save_model(request, obj, form, change)
        else:
            obj.plaintext = services.api_token_issue(token=obj, user=request.user)

    def response_add(self, request, obj, post_url_continue=None):
        """Show the plaintext once, on this response only (never in a message or the session)."""
        context = {
            **self.admin_site.each_context(request),
            "title": "API token created",
            "opts": self.opts,
            "token": obj,
            "plaintext": obj.plaintext,
            "changelist_url": reverse("admin:api_apitoken_changelist"),
        }
        response = TemplateResponse(request, "admin/api/apitoken/created.html", context)
        response["Cache-Control"] = "no-store"
        return response

    @admin.action(description="Revoke selected API tokens", permissions=["change"])
    def revoke_selected(self, request, queryset):
        revoked = sum(services.api_token_revoke(token=token) for token in queryset)
        self.message_user(request, f"Revoked {revoked} token{'s' * (revoked != 1)}.")

    def get_urls(self):
        revoke = self.admin_site.admin_view(self.revoke_view)
        return [
            path("<path:object_id>/revoke/", revoke, name="api_apitoken_revoke"),
            *super().get_urls(),
        ]

    def revoke_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        return require_POST(self._revoke)(request, object_id)

    def _revoke(self, request: HttpRequest, object_id: str) -> HttpResponse:
        token = get_object_or_404(ApiToken, pk=object_id)
        if not self.has_change_permission(request, token):
            raise PermissionDenied
        if services.api_token_revoke(token=token):
            self.message_user(request, f"Revoked {token}: it no longer authenticates.")
        else:
            self.message_user(request, f"{token} was already revoked.", messages.WARNING)
        return HttpResponseRedirect(reverse("admin:api_apitoken_change", args=[token.pk]))
