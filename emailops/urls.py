from django.contrib import admin
from django.http import HttpRequest, HttpResponseRedirect
from django.templatetags.static import static
from django.urls import include, path
from django.views.generic import RedirectView

from api.endpoints import api

# Here, not at Django's start-up (SimpleAdminConfig): the console's modules load in the processes
# that serve URLs, never in a queue consumer.
admin.autodiscover()


def favicon(request: HttpRequest) -> HttpResponseRedirect:
    """Browsers ask for /favicon.ico on every page; the console's icon is a static file."""
    return HttpResponseRedirect(static("templates_admin/favicon.svg"))


urlpatterns = [
    path("favicon.ico", favicon),
    path("admin/", admin.site.urls),
    path("api/v1/", api.urls),
    # Public, outside /admin/: the one-click unsubscribe (RFC 8058) and its page.
    path("", include("preferences.urls")),
    path("", RedirectView.as_view(url="/admin/", permanent=False)),
]
