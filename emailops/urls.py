from django.contrib import admin
from django.urls import path
from django.views.generic import RedirectView

from api.endpoints import api

# Here, not at Django's start-up (SimpleAdminConfig): the console's modules load in the processes
# that serve URLs, never in a queue consumer.
admin.autodiscover()

urlpatterns = [
    path("admin/", admin.site.urls),
    path("api/v1/", api.urls),
    path("", RedirectView.as_view(url="/admin/", permanent=False)),
]
