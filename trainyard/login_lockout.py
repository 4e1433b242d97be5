"""Log-in throttling's two site-specific parts: whose address, and the page a lock shows.

django-axes locks a username out from one address after ``AXES_FAILURE_LIMIT``
failed passwords (settings). It asks ``client_address`` for the address, and
calls ``lockout_response`` instead of answering with a bare 403 text.
"""

from __future__ import annotations

from django.conf import settings
from django.contrib.auth.forms import AuthenticationForm
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils.translation import ngettext

# Too Many Requests: the client may try again later, as Retry-After says.
LOCKED_OUT_STATUS = 429


def client_address(request: HttpRequest) -> str | None:
    """The address a lock is kept for: the peer's, or the one the trusted proxies saw.

    Behind ``TRAINYARD_PROXY_COUNT`` proxies that each append to X-Forwarded-For,
    the client is that many entries from its right end; what a client writes
    further left is its own claim and is ignored. Without it every user would
    share the proxy's address, and one person's failures would lock out all.
    """
    proxies = settings.TRAINYARD_PROXY_COUNT
    forwarded = [a.strip() for a in request.META.get("HTTP_X_FORWARDED_FOR", "").split(",")]
    if proxies and len(forwarded) >= proxies and forwarded[-proxies]:
        return forwarded[-proxies]
    return request.META.get("REMOTE_ADDR")


def lockout_minutes() -> int:
    return int(settings.AXES_COOLOFF_TIME.total_seconds() // 60)


def lockout_response(
    request: HttpRequest, original_response: HttpResponse | None, credentials: dict | None
) -> HttpResponse:
    minutes = lockout_minutes()
    username = (credentials or {}).get("username") or request.POST.get("username", "")
    message = ngettext(
        "Too many failed log-ins for this username from your address. "
        "Try again in %(minutes)d minute.",
        "Too many failed log-ins for this username from your address. "
        "Try again in %(minutes)d minutes.",
        minutes,
    ) % {"minutes": minutes}
    context = {
        "form": AuthenticationForm(request, initial={"username": username}),
        "next": request.POST.get("next", ""),
        "lockout_message": message,
    }
    response = render(request, "registration/login.html", context, status=LOCKED_OUT_STATUS)
    response["Retry-After"] = str(minutes * 60)
    return response
