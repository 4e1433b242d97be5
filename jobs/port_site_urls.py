"""The proxy's own paths on each port's site (``/_trainyard/``; jobs/port_sites.py)."""

from django.urls import path

from . import proxy_views

app_name = "port_site"
urlpatterns = [
    path("login", proxy_views.proxy_login, name="login"),
    path("auth", proxy_views.proxy_auth, name="auth"),
    path("start", proxy_views.proxy_start, name="start"),
    path("refused", proxy_views.proxy_refused, name="refused"),
]
