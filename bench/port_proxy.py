"""What the authenticated port proxy adds: a small page and a WebSocket round trip, through
nginx (with its auth_request to Trainyard) side by side with the same server reached directly.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/trainyard .venv/bin/python bench/port_proxy.py

One machine: a scratch database (``<name>_proxybench``) with one running job whose port
7000 is "published" at a local echo server (HTTP and WebSocket, the server
tests/test_port_proxy.py runs in a job), Trainyard's web process as ``make run`` starts it
(gunicorn, 2 workers × 4 threads), and nginx with the project's configuration. Each page
is a fresh connection, as the proxy's upstream is; the WebSocket is one connection, many
round trips. Pages go through the proxy as configured (nginx keeps Trainyard's yes for
3 s) and through a second nginx that asks Trainyard every time (a page's first request).
Prints p50, p99 and the mean for each way and their ratios.
"""

from __future__ import annotations

import argparse
import http.client
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from scratch import ROOT, django_setup, scratch_database

ECHO = """
from websockets.sync.server import serve
def answer(connection, request):
    return None if request.path == "/ws" else connection.respond(200, "hello " * 20)
def echo(websocket):
    for message in websocket:
        websocket.send(message)
with serve(echo, "127.0.0.1", int(__import__("sys").argv[1]), process_request=answer) as s:
    s.serve_forever()
"""


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def wait_listening(port: int, what: str) -> None:
    for _ in range(200):
        try:
            socket.create_connection(("127.0.0.1", port), 1).close()
            return
        except OSError:
            time.sleep(0.05)
    sys.exit(f"{what} did not start on port {port}")


def running_job(upstream_port: int):
    from jobs.models import Job, JobPort, PortAllocation, Replica
    from resources.models import Node
    from tests.factories import JobFactory, UserFactory

    owner = UserFactory(username="bench-owner")
    node = Node.objects.create(
        name="proxy-bench", address="127.0.0.1", cpu_milli=8000, memory_mib=16384
    )
    job = JobFactory(
        owner=owner, state=Job.State.RUNNING, resource_kind="cpu", gpu_model=None, gpu_count=0
    )
    JobPort.objects.create(job=job, port=7000)
    replica = Replica.objects.create(job=job, index=0, node=node)
    PortAllocation.objects.create(replica=replica, job_port=7000, host_port=upstream_port)
    return owner, job


def get_times(port: int, host: str, headers: dict, count: int) -> list[float]:
    times = []
    for _ in range(count):
        start = time.perf_counter()
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        connection.request("GET", "/page", headers={"Host": host, **headers})
        response = connection.getresponse()
        body = response.read()
        connection.close()
        times.append(time.perf_counter() - start)
        assert response.status == 200 and body.startswith(b"hello"), (response.status, body[:200])
    return times


def websocket_times(port: int, host: str, headers: dict, count: int) -> list[float]:
    from websockets.sync.client import connect

    raw = socket.create_connection(("127.0.0.1", port), 10)
    times = []
    with connect(f"ws://{host}/ws", sock=raw, additional_headers=headers) as ws:
        for i in range(count):
            start = time.perf_counter()
            ws.send(f"ping {i}")
            assert ws.recv(10) == f"ping {i}"
            times.append(time.perf_counter() - start)
    return times


def figures(label: str, direct: list[float], proxied: list[float]) -> None:
    def pct(values, q):
        return statistics.quantiles(values, n=100)[q - 1] * 1000

    print(f"{label}: {len(direct)} each")
    print(f"  {'':22} {'direct':>9} {'proxied':>9} {'ratio':>7} {'added':>8}")
    for name, fn in (
        ("p50 ms", lambda v: pct(v, 50)),
        ("p99 ms", lambda v: pct(v, 99)),
        ("mean ms", lambda v: statistics.fmean(v) * 1000),
    ):
        a, b = fn(direct), fn(proxied)
        print(f"  {name:22} {a:9.3f} {b:9.3f} {b / a:7.2f} {b - a:8.3f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--pages", type=int, default=2000)
    parser.add_argument("--round-trips", type=int, default=5000)
    args = parser.parse_args()
    nginx = shutil.which("nginx") or "/usr/sbin/nginx"
    if not Path(nginx).exists():
        sys.exit("nginx is not installed (apt-get install nginx)")
    django_setup()
    from django.conf import settings

    from jobs.port_sites import COOKIE, PortSite, session_value
    from jobs.proxy_nginx import ProxyPlaces, write_config

    with scratch_database("proxybench") as db, tempfile.TemporaryDirectory() as folder:
        os.chmod(folder, 0o755)  # nginx's workers run as nobody when it starts as root
        upstream_port, web_port, proxy_port = free_port(), free_port(), free_port()
        settings.TRAINYARD_PROXY_ORIGIN = f"http://jobs.localhost:{proxy_port}"
        owner, job = running_job(upstream_port)
        site = PortSite(job.pk, 7000)
        cookie = {"Cookie": f"{COOKIE}={session_value(owner, site)}"}
        database = f"postgres://{db['USER']}@{db['HOST']}:{db['PORT']}/{db['NAME']}"
        env = {
            **os.environ,
            "DATABASE_URL": database,
            "TRAINYARD_PROXY_ORIGIN": settings.TRAINYARD_PROXY_ORIGIN,
        }
        python = sys.executable
        processes = [
            subprocess.Popen([python, "-c", ECHO, str(upstream_port)], env=env),
            subprocess.Popen(
                [
                    str(Path(python).parent / "gunicorn"),
                    "trainyard.wsgi",
                    "--config",
                    "python:trainyard.gunicorn",
                    "--bind",
                    f"127.0.0.1:{web_port}",
                    "--workers",
                    "2",
                    "--threads",
                    "4",
                ],
                cwd=ROOT,
                env=env,
                stderr=subprocess.DEVNULL,
            ),
        ]
        places = ProxyPlaces(
            listen=[f"127.0.0.1:{proxy_port}"],
            dashboard=f"127.0.0.1:{web_port}",
            folder=Path(folder),
        )
        # A second nginx that asks Trainyard on every request (its yes not kept): the cost
        # of a page's first request, or of every request were there no cache.
        uncached_port = free_port()
        uncached = ProxyPlaces(
            listen=[f"127.0.0.1:{uncached_port}"],
            dashboard=places.dashboard,
            folder=Path(folder) / "uncached",
        )
        uncached.folder.mkdir(mode=0o755)
        uncached_config = write_config(uncached)
        text = uncached_config.read_text()
        assert "proxy_cache trainyard_auth;" in text
        uncached_config.write_text(text.replace("proxy_cache trainyard_auth;", "proxy_cache off;"))
        for way, config in ((places, write_config(places)), (uncached, uncached_config)):
            processes.append(
                subprocess.Popen(
                    [nginx, "-p", str(way.folder), "-c", str(config), "-g", "daemon off;"]
                )
            )
        try:
            for port, what in (
                (upstream_port, "the echo server"),
                (web_port, "gunicorn"),
                (proxy_port, "nginx"),
                (uncached_port, "the second nginx"),
            ):
                wait_listening(port, what)
            direct_host = f"127.0.0.1:{upstream_port}"
            proxied_host = f"{site.host}:{proxy_port}"
            get_times(proxy_port, proxied_host, cookie, 50)  # warm: workers, connections
            get_times(upstream_port, direct_host, {}, 50)
            direct = get_times(upstream_port, direct_host, {}, args.pages)
            proxied = get_times(proxy_port, proxied_host, cookie, args.pages)
            figures("A small page (GET, a new connection each)", direct, proxied)
            asked_host = f"{site.host}:{uncached_port}"
            get_times(uncached_port, asked_host, cookie, 50)
            asked = get_times(uncached_port, asked_host, cookie, args.pages)
            figures("The same, Trainyard asked on every request (no cache)", direct, asked)
            direct = websocket_times(upstream_port, direct_host, {}, args.round_trips)
            proxied = websocket_times(proxy_port, proxied_host, cookie, args.round_trips)
            figures("A WebSocket round trip (one connection)", direct, proxied)
        finally:
            for process in processes:
                process.terminate()
                process.wait(10)


if __name__ == "__main__":
    main()
