"""The proxy's nginx configuration as the project renders it: nginx itself accepts it."""

from __future__ import annotations

import subprocess

from jobs.proxy_nginx import ProxyPlaces, write_config
from tests.proxy_support import NGINX


def test_nginx_accepts_the_rendered_configuration(tmp_path):
    places = ProxyPlaces(listen=["127.0.0.1:8080"], dashboard="127.0.0.1:8000", folder=tmp_path)
    config = write_config(places)
    checked = subprocess.run(
        [NGINX, "-t", "-p", str(tmp_path), "-c", str(config)], capture_output=True, text=True
    )
    assert checked.returncode == 0, checked.stderr
    assert "syntax is ok" in checked.stderr
