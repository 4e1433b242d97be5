"""The authenticated proxy's side in Trainyard: the dashboard's "Open" link, and the
``/_trainyard/`` views nginx asks on each port's own site (jobs/port_sites.py).

nginx (``manage.py run_proxy``) sends every request on a port's site to ``auth`` first
(``auth_request``): 204 with the upstream to pass it to, 401 (no valid cookie: ``start``
sends the browser to the dashboard for a ticket) or 403 (``refused`` says why).
"""

from __future__ import annotations

import socket
from urllib.parse import urlencode

from django.conf import settings
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.cache import never_cache
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_GET

from .detail_views import visible_job
from .port_sites import (
    COOKIE,
    SESSION_SECONDS,
    PortSite,
    active_user,
    safe_next,
    session_user,
    session_value,
    site_for_host,
    ticket_for,
    ticket_read,
)
from .selectors import port_site_target

UPSTREAM_HEADER = "X-Trainyard-Upstream"


@require_GET
def port_open(request: HttpRequest, pk: int, port: int) -> HttpResponse:
    """The job page's "Open": a ticket for the port's own site, which logs the user in there."""
    job = visible_job(request, pk)
    if not job.ports.filter(port=port).exists():
        raise Http404("The job does not open this port.")
    site = PortSite(job.pk, port)
    ticket = ticket_for(request.user, site, request.GET.get("next", "/"))
    return HttpResponseRedirect(f"{site.origin}/_trainyard/login?{urlencode({'ticket': ticket})}")


@never_cache
@require_GET
def proxy_login(request: HttpRequest) -> HttpResponse:
    """On the port's site: a ticket from the dashboard becomes this site's own cookie."""
    site = _site(request)
    read = ticket_read(request.GET.get("ticket", ""), site)
    if read is None:
        return _refusal(request, site, "expired", status=403)
    user_id, next_path = read
    user = active_user(user_id)
    if user is None:
        return _refusal(request, site, "expired", status=403)
    response = HttpResponseRedirect(next_path)
    # __Host-: Secure, Path=/, no Domain; the browser keeps it to this one host.
    response.set_cookie(
        COOKIE,
        session_value(user, site),
        max_age=SESSION_SECONDS,
        path="/",
        secure=True,
        httponly=True,
        samesite="Lax",
    )
    return response


@csrf_exempt  # nginx asks with the method of the request it checks; nothing here writes
@never_cache
def proxy_auth(request: HttpRequest) -> HttpResponse:
    """nginx's ``auth_request``: may this request through, and to where?"""
    site = _site(request)
    user = session_user(request.COOKIES.get(COOKIE, ""), site)
    if user is None:
        return HttpResponse(status=401)
    why, job = port_site_target(user=user, job_id=site.job_id, port=site.port)
    if why:
        return HttpResponse(status=403)
    address, host_port = job.upstream
    response = HttpResponse(status=204)
    response[UPSTREAM_HEADER] = f"{_connectable(address)}:{host_port}"
    return response


@never_cache
def proxy_start(request: HttpRequest) -> HttpResponse:
    """nginx after a 401: to the dashboard, which signs the user in and hands a ticket."""
    site = _site(request)
    wanted = safe_next(request.headers.get("X-Original-URI", "/"))
    query = f"?{urlencode({'next': wanted})}" if wanted != "/" else ""
    return HttpResponseRedirect(f"{_open_url(site)}{query}")


@never_cache
def proxy_refused(request: HttpRequest) -> HttpResponse:
    """nginx after a 403 (or a port that does not answer): a page that says why."""
    site = _site(request)
    if request.GET.get("why") == "unreachable":
        return _refusal(request, site, "unreachable", status=502)
    user = session_user(request.COOKIES.get(COOKIE, ""), site)
    if user is None:
        return _refusal(request, site, "expired", status=403)
    why, job = port_site_target(user=user, job_id=site.job_id, port=site.port)
    status = 403 if why == "forbidden" else 503
    return _refusal(request, site, why or "unreachable", status=status, job=job)


def _site(request: HttpRequest) -> PortSite:
    site = site_for_host(request.get_host())
    if site is None:  # trainyard.middleware.PortSiteMiddleware keeps them apart first
        raise Http404("Not a port's site.")
    return site


def _open_url(site: PortSite) -> str:
    path = reverse("jobs:port_open", kwargs={"pk": site.job_id, "port": site.port})
    return f"{settings.TRAINYARD_BASE_URL}{path}"


def _connectable(address: str) -> str:
    """The node's address as nginx connects to it (no resolver there): an IP literal."""
    try:
        family, *_rest, sockaddr = socket.getaddrinfo(address, None, type=socket.SOCK_STREAM)[0]
    except (OSError, IndexError):
        return address
    return f"[{sockaddr[0]}]" if family == socket.AF_INET6 else sockaddr[0]


def _refusal(request, site: PortSite, why: str, *, status: int, job=None) -> HttpResponse:
    job_path = reverse("jobs:detail", kwargs={"pk": site.job_id})
    context = {
        "site": site,
        "why": why,
        "job": job,
        "job_url": f"{settings.TRAINYARD_BASE_URL}{job_path}",
        "open_url": _open_url(site),
    }
    return render(request, "jobs/port_refused.html", context, status=status)
