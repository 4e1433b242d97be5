from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.http import HttpResponse, HttpResponseRedirect
from django.templatetags.static import static
from django.urls import include, path
from django.views.generic import RedirectView

from trainyard.api import api


def healthz(request):
    return HttpResponse("ok", content_type="text/plain")


def favicon(request):
    # Browsers ask for /favicon.ico on pages without an icon link (the admin's).
    return HttpResponseRedirect(static("img/trainyard.svg"))


urlpatterns = [
    path("", RedirectView.as_view(pattern_name="jobs:list", permanent=False)),
    path("accounts/login/", auth_views.LoginView.as_view(), name="login"),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("profile/", include("accounts.urls")),
    path("i18n/", include("django.conf.urls.i18n")),
    path("admin/", admin.site.urls),
    path("jobs/", include("jobs.urls")),
    # Served on each job port's own site only (trainyard.middleware.PortSiteMiddleware).
    path("_trainyard/", include("jobs.port_site_urls")),
    path("resources/", include("jobs.resource_urls")),
    path("billing/", include("accounting.urls")),
    path("notifications/", include("notifications.urls")),
    path("api/v1/", api.urls),
    path("healthz", healthz),
    path("favicon.ico", favicon),
]
