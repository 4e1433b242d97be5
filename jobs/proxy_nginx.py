"""The authenticated proxy's nginx configuration, rendered by the project
(``manage.py run_proxy`` starts it with ``make run``; ``manage.py run_proxy --print``
for a site's own nginx; docs/port-proxy.md).

Every request to a port's site (``j<job>-<port>.<domain>``) is first asked of Trainyard
(``auth_request`` → ``/_trainyard/auth``), which answers with the upstream to pass it to:
the node's address and the host port that publishes the job's port. Nothing a job
controls names the upstream. The proxy's own cookie is taken out of what the job sees.
"""

from __future__ import annotations

import grp
import os
import pwd
import re
from dataclasses import dataclass, field
from pathlib import Path

from .port_sites import COOKIE, RESERVED_PREFIX, proxy_domain

# How long nginx keeps Trainyard's yes to a cookie on a port's site: a revoked access, or a
# job that stopped, is seen within this many seconds.
AUTH_CACHE_SECONDS = 3
# nginx's folders under ``ProxyPlaces.folder / "tmp"`` (its workers write there).
TEMPORARY = ("client_body", "proxy", "fastcgi", "uwsgi", "scgi", "auth_cache")
WORKER_ACCOUNT = "nobody"


@dataclass(frozen=True)
class ProxyPlaces:
    listen: list[str]  # nginx ``listen`` values: "127.0.0.1:8080", "[::1]:8080"
    dashboard: str  # where Trainyard's web process answers: "127.0.0.1:8000"
    folder: Path  # pid and temporary files
    # The workers' account and group: nginx started as root runs them as ``nobody``, which
    # must own the folders they write (the auth cache above all).
    user: str | None = field(default_factory=lambda: worker_user())


def nginx_config(places: ProxyPlaces) -> str:
    host = rf"~^j(?<job>[1-9][0-9]*)-(?<port>[1-9][0-9]*)\.{re.escape(proxy_domain())}$"
    listen = "\n".join(f"    listen {value};" for value in places.listen)
    default = "\n".join(f"    listen {value} default_server;" for value in places.listen)
    temp = "\n".join(
        f"  {kind}_temp_path {places.folder / 'tmp' / kind};" for kind in TEMPORARY[:-1]
    )
    user = f"user {places.user};\n" if places.user else ""
    # Trainyard's answers in the job's place: after a 401, a 403, a port that does not answer.
    pages = "\n".join(
        _page(name, target)
        for name, target in (
            ("start", "start"),
            ("refused", "refused"),
            ("unreachable", "refused?why=unreachable"),
        )
    )
    # The cookie header without the proxy's own cookie (wherever it stands in the list).
    cookie = re.escape(COOKIE)
    return f"""# Rendered by Trainyard (jobs/proxy_nginx.py); changes here are overwritten.
{user}worker_processes auto;
pid {places.folder / "nginx.pid"};
error_log stderr warn;
events {{ worker_connections 4096; }}

http {{
  access_log off;
  server_tokens off;
{temp}
  map $http_upgrade $connection_upgrade {{ default upgrade; "" close; }}
  map $http_cookie $job_cookie {{
    "~^(?<before>.+?);\\s*{cookie}=[^;]*(?<after>.*)$" "$before$after";
    "~^\\s*{cookie}=[^;]*;?\\s*(?<rest>.*)$" "$rest";
    default $http_cookie;
  }}
  map $http_cookie $proxy_cookie {{
    "~(?:^|;)\\s*{cookie}=(?<value>[^;]*)" $value;
    default "";
  }}
  proxy_cache_path {places.folder / "tmp" / "auth_cache"} levels=1 keys_zone=trainyard_auth:1m
                   max_size=16m inactive=1m;
  upstream trainyard {{ server {places.dashboard}; keepalive 32; }}

  server {{
{default}
    return 404;
  }}

  server {{
{listen}
    server_name "{host}";
    client_max_body_size 0;

    # Trainyard's own paths on the port's site: its log-in, its pages.
    location {RESERVED_PREFIX} {{
      proxy_pass http://trainyard;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_set_header Host $http_host;
      proxy_set_header X-Forwarded-Proto $scheme;
      proxy_set_header X-Forwarded-For $remote_addr;
    }}
    location = {RESERVED_PREFIX}auth {{
      internal;
      proxy_pass http://trainyard;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      # A yes holds for AUTH_CACHE_SECONDS per site and cookie (a page's many files ask once);
      # a no is never kept.
      proxy_cache trainyard_auth;
      proxy_cache_key "$http_host $proxy_cookie";
      proxy_cache_valid 204 {AUTH_CACHE_SECONDS}s;
      proxy_ignore_headers Cache-Control Expires Set-Cookie Vary;
      proxy_pass_request_body off;
      proxy_set_header Content-Length "";
      proxy_set_header Host $http_host;
      proxy_set_header X-Forwarded-Proto $scheme;
    }}
{pages}

    # The job: HTTP and WebSockets, to replica 0's published port.
    location / {{
      auth_request {RESERVED_PREFIX}auth;
      auth_request_set $job_upstream $upstream_http_x_trainyard_upstream;
      error_page 401 = @start;
      error_page 403 = @refused;
      error_page 502 504 = @unreachable;
      proxy_pass http://$job_upstream;
      proxy_http_version 1.1;
      proxy_set_header Host $http_host;
      proxy_set_header Upgrade $http_upgrade;
      proxy_set_header Connection $connection_upgrade;
      proxy_set_header Cookie $job_cookie;
      proxy_set_header X-Forwarded-Proto $scheme;
      proxy_set_header X-Forwarded-For $remote_addr;
      proxy_connect_timeout 5s;
      proxy_read_timeout 1d;
      proxy_send_timeout 1d;
      proxy_buffering off;
    }}
  }}
}}
"""


def _page(name: str, target: str) -> str:
    return f"""    location @{name} {{
      rewrite ^ {RESERVED_PREFIX}{target}? break;
      proxy_pass http://trainyard;
      proxy_method GET;
      proxy_pass_request_body off;
      proxy_set_header Content-Length "";
      proxy_set_header Host $http_host;
      proxy_set_header X-Original-URI $request_uri;
    }}"""


def worker_user() -> str | None:
    """nginx's ``user`` as root: the account and its own group (Debian's is ``nogroup``)."""
    if os.geteuid() != 0:
        return None
    account = pwd.getpwnam(WORKER_ACCOUNT)
    return f"{WORKER_ACCOUNT} {grp.getgrgid(account.pw_gid).gr_name}"


def write_config(places: ProxyPlaces) -> Path:
    """The configuration file, with the folders it names (the workers' own when root)."""
    for kind in TEMPORARY:
        temp = places.folder / "tmp" / kind
        temp.mkdir(parents=True, exist_ok=True, mode=0o700)
        if places.user:
            account = pwd.getpwnam(WORKER_ACCOUNT)
            os.chown(temp, account.pw_uid, account.pw_gid)
    path = places.folder / "nginx.conf"
    path.write_text(nginx_config(places))
    return path
