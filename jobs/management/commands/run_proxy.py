"""Run the authenticated proxy to jobs' open ports: nginx, with the configuration the
project renders (jobs/proxy_nginx.py). ``make run`` starts it beside the web process;
``--print`` writes the configuration for a site that runs nginx itself.
"""

from __future__ import annotations

import os
import shutil
import signal
import sys
from pathlib import Path
from urllib.parse import urlsplit

from django.conf import settings
from django.core.management.base import BaseCommand

from jobs.proxy_nginx import ProxyPlaces, nginx_config, write_config


class Command(BaseCommand):
    help = "Run nginx as the authenticated proxy to jobs' open ports."

    def add_arguments(self, parser) -> None:
        parser.add_argument(
            "--dashboard", default="127.0.0.1:8000", help="where the web process answers"
        )
        parser.add_argument(
            "--listen",
            action="append",
            help="an nginx listen address (repeatable; default: loopback at the proxy's port)",
        )
        parser.add_argument("--folder", default=str(settings.VAR_DIR / "proxy"))
        parser.add_argument("--print", action="store_true", help="print the configuration only")

    def handle(self, *args, dashboard: str, listen, folder: str, print: bool, **options):
        port = urlsplit(settings.TRAINYARD_PROXY_ORIGIN).port or 80
        places = ProxyPlaces(
            listen=listen or [f"127.0.0.1:{port}", f"[::1]:{port}"],
            dashboard=dashboard.replace("0.0.0.0:", "127.0.0.1:"),
            folder=Path(folder).resolve(),
        )
        config = nginx_config(places)
        if print:
            self.stdout.write(config)
            return
        nginx = shutil.which("nginx") or next(
            (p for p in ("/usr/sbin/nginx",) if os.access(p, os.X_OK)), None
        )
        if nginx is None:
            # Not an exit: honcho would stop every other process with it.
            self.stderr.write(
                "nginx is not installed: jobs' ports open only at their node's host port "
                "(Debian: apt-get install nginx)."
            )
            signal.pause()
            return
        path = write_config(places)
        sys.stdout.flush()
        os.execv(nginx, [nginx, "-p", str(places.folder), "-c", str(path), "-g", "daemon off;"])
