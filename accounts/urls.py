"""The profile page and its tokens (``/profile/``); the URL names stay unnamespaced."""

from django.urls import path

from . import views

urlpatterns = [
    path("", views.profile, name="profile"),
    path("tokens/<int:token_id>/revoke/", views.token_revoke, name="token_revoke"),
]
