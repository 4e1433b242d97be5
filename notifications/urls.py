from django.urls import path

from . import views

app_name = "notifications"
urlpatterns = [
    path("", views.notification_list, name="list"),
    path("read/", views.notification_mark_read, name="mark_read"),
    path("settings/", views.notification_settings, name="settings"),
]
