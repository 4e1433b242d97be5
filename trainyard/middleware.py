import zoneinfo
from collections.abc import Callable

from django.conf import settings
from django.contrib.auth.views import redirect_to_login
from django.http import Http404, HttpRequest, HttpResponse
from django.utils import timezone

from jobs.port_sites import RESERVED_PREFIX, site_for_host

# Paths that answer without a session: the login page, static files, and the
# JSON API (which authenticates with bearer tokens and answers 401 itself).
PUBLIC_PREFIXES = ("/accounts/login/", "/static/", "/api/", "/i18n/", "/healthz", RESERVED_PREFIX)


class PortSiteMiddleware:
    """A job port's own site reaches only the proxy's views (``/_trainyard/``), and those
    answer there only: nothing of the dashboard is served under a job's host name, where
    the job's own pages run (jobs/port_sites.py)."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        on_port_site = site_for_host(request.get_host()) is not None
        if on_port_site != request.path.startswith(RESERVED_PREFIX):
            raise Http404("Not on this site.")
        return self.get_response(request)


class LoginRequiredMiddleware:
    """Every page requires a signed-in user unless its path is public."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if not request.user.is_authenticated and not request.path.startswith(PUBLIC_PREFIXES):
            return redirect_to_login(request.get_full_path(), settings.LOGIN_URL)
        return self.get_response(request)


class UserTimezoneMiddleware:
    """Show times in the browser's time zone, which a script stores in a cookie."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        name = request.COOKIES.get(settings.TIME_ZONE_COOKIE_NAME, "")
        try:
            timezone.activate(zoneinfo.ZoneInfo(name)) if name else timezone.deactivate()
        except (zoneinfo.ZoneInfoNotFoundError, ValueError):
            timezone.deactivate()
        return self.get_response(request)
