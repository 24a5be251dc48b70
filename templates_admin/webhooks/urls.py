"""The webhooks pages under /admin/templates_admin/webhookspage/ (the endpoint list is the
changelist itself)."""

from __future__ import annotations

from functools import partial

from django.urls import URLPattern, path

from templates_admin.webhooks import views


def admin_urls(admin_site) -> list[URLPattern]:
    def page(view):
        return admin_site.admin_view(partial(view, admin_site=admin_site))

    name = "templates_admin_webhooks_"
    return [
        path("add/", page(views.add), name=f"{name}add"),
        path("endpoint/<int:pk>/", page(views.endpoint), name=f"{name}endpoint"),
        path("endpoint/<int:pk>/rotate/", page(views.rotate), name=f"{name}rotate"),
        path("endpoint/<int:pk>/switch/", page(views.switch), name=f"{name}switch"),
        path("endpoint/<int:pk>/remove/", page(views.remove), name=f"{name}remove"),
        path("endpoint/<int:pk>/test/", page(views.send_test), name=f"{name}test"),
        path("delivery/<int:pk>/", page(views.delivery), name=f"{name}delivery"),
        path("delivery/<int:pk>/replay/", page(views.replay_delivery), name=f"{name}replay"),
    ]
