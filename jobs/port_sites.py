"""Each open port of a running job is its own web site, never the dashboard's.

A job's port ``p`` is served through the authenticated proxy at ``j<job>-<p>.<domain>``
(``TRAINYARD_PROXY_ORIGIN`` names the domain, its scheme and port; docs/port-proxy.md).
A host of its own, not a path or a port of the dashboard's: browsers scope cookies by host
and ignore ports (RFC 6265 §8.5), so HTML a job serves can neither read nor plant the
dashboard's cookies, and an app that needs a base URL runs at ``/``.

The proxy's log-in: the dashboard hands a short-lived signed *ticket* (who, which job and
port, where to go) to the port's site, which trades it for its own host-only ``__Host-``
cookie. Both are signed with the site's secret key, each with its own salt, and bound to
the job and port, so neither opens another job's port.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import urlsplit

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.base_user import AbstractBaseUser
from django.core import signing
from django.utils.crypto import constant_time_compare

from jobs.models.job import MAX_PORT, MIN_PORT

COOKIE = "__Host-trainyard-proxy"
# What the proxy reserves on every port's site (Trainyard's own log-in and pages).
RESERVED_PREFIX = "/_trainyard/"
TICKET_SECONDS = 60
SESSION_SECONDS = 12 * 3600
_TICKET_SALT = "trainyard.port-proxy.ticket"
_SESSION_SALT = "trainyard.port-proxy.session"


@dataclass(frozen=True)
class PortSite:
    """Job ``job_id``'s port ``port`` as a web site (replica 0's)."""

    job_id: int
    port: int

    @property
    def host(self) -> str:
        return f"j{self.job_id}-{self.port}.{_origin().hostname}"

    @property
    def origin(self) -> str:
        origin = _origin()
        port = f":{origin.port}" if origin.port else ""
        return f"{origin.scheme}://{self.host}{port}"

    @property
    def url(self) -> str:
        return f"{self.origin}/"


def _origin():
    return urlsplit(settings.TRAINYARD_PROXY_ORIGIN)


def proxy_domain() -> str:
    """The domain under which every port's site lives (``jobs.localhost`` locally)."""
    return _origin().hostname or ""


def site_for_host(host: str) -> PortSite | None:
    """The port's site a request's ``Host`` names, or None (the dashboard, or nonsense)."""
    name = host.rsplit(":", 1)[0] if not host.endswith("]") else host
    pattern = rf"j([1-9][0-9]{{0,17}})-([1-9][0-9]{{0,4}})\.{re.escape(proxy_domain())}"
    match = re.fullmatch(pattern, name.lower())
    if match is None:
        return None
    port = int(match[2])
    return PortSite(int(match[1]), port) if MIN_PORT <= port <= MAX_PORT else None


def safe_next(path: str) -> str:
    """A path on the port's own site to go to after log-in; ``/`` for anything else."""
    if not path.startswith("/") or path.startswith(("//", "/\\")) or "\\" in path:
        return "/"
    if path.startswith(RESERVED_PREFIX) or any(ord(c) < 32 for c in path):
        return "/"
    return path


def ticket_for(user: AbstractBaseUser, site: PortSite, next_path: str = "/") -> str:
    value = {"u": user.pk, "j": site.job_id, "p": site.port, "n": safe_next(next_path)}
    return signing.dumps(value, salt=_TICKET_SALT, compress=True)


def ticket_read(ticket: str, site: PortSite) -> tuple[int, str] | None:
    """(user id, next path) from a ticket for this site no older than ``TICKET_SECONDS``."""
    value = _loads(ticket, _TICKET_SALT, TICKET_SECONDS, site)
    return (value["u"], safe_next(str(value.get("n", "/")))) if value else None


def session_value(user: AbstractBaseUser, site: PortSite) -> str:
    """The port's site's cookie: bound to the job, the port and the user's password."""
    value = {"u": user.pk, "j": site.job_id, "p": site.port, "h": user.get_session_auth_hash()}
    return signing.dumps(value, salt=_SESSION_SALT, compress=True)


def session_user(cookie: str, site: PortSite) -> AbstractBaseUser | None:
    """The active user a cookie of this site stands for; None once their password changed."""
    value = _loads(cookie, _SESSION_SALT, SESSION_SECONDS, site)
    if value is None:
        return None
    user = active_user(value["u"])
    if user is None or not constant_time_compare(value["h"], user.get_session_auth_hash()):
        return None
    return user


def active_user(user_id: int) -> AbstractBaseUser | None:
    return get_user_model().objects.filter(pk=user_id, is_active=True).first()


def _loads(text: str, salt: str, max_age: int, site: PortSite) -> dict | None:
    try:
        value = signing.loads(text, salt=salt, max_age=max_age)
    except signing.BadSignature:  # SignatureExpired too
        return None
    if not isinstance(value, dict) or (value.get("j"), value.get("p")) != (
        site.job_id,
        site.port,
    ):
        return None
    return value
