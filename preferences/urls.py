from django.urls import path

from preferences import views

app_name = "preferences"

urlpatterns = [
    # RFC 8058's one-click POST and the page a recipient opens: one URL, the List-Unsubscribe one.
    path("u/<str:token>", views.unsubscribe, name="unsubscribe"),
]
