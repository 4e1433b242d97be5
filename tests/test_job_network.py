"""A job reaches nothing of the platform: each replica has a network of its own.

Replays of finding 1 of the hostile-job review (a job ran ``psql -h 127.0.0.1``
against the platform's database): the job tries every address the host has,
and the platform's database and broker where their URLs point, and must be
refused everywhere; it cannot take a host port; its open ports are published
at the host ports the platform allocated, for anyone outside to use. Tests
that take ``site`` run on the local agent and on Slurm alike.
"""

from __future__ import annotations

import socket
import subprocess
import threading
import urllib.request
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from django.conf import settings
from django.db import connection

from jobs.execution.files import replica_output_dir, storage_name
from jobs.execution.replica.network import reachable_address
from jobs.models import Job, JobPort, PortAllocation
from tests.agent_support import attempts_of, cpu_job, place, wait_for_state
from tests.support.waiting import wait_until
from tests.test_hostile_jobs import PROBE, assert_platform_fine, outcomes, output

pytestmark = pytest.mark.integration

CONNECT = (
    "python3 -c 'import socket,sys; socket.create_connection((sys.argv[1], int(sys.argv[2])), 3)'"
)


def host_addresses() -> list[str]:
    """Every IPv4 address of this host, loopback included (the job bridge's too, once made)."""
    lines = subprocess.run(
        ["ip", "-4", "-o", "addr", "show"], capture_output=True, text=True, check=True
    ).stdout.splitlines()
    return sorted({line.split()[3].split("/")[0] for line in lines})


def service_address(url: str, default_port: int) -> tuple[str, int]:
    parts = urlsplit(url)
    return parts.hostname or "127.0.0.1", parts.port or default_port


@pytest.fixture
def host_listener():
    """A service of the host's listening on every address, as a careless one would."""
    server = socket.create_server(("0.0.0.0", 0), backlog=64)
    stop = threading.Event()

    def accept() -> None:
        server.settimeout(0.2)
        while not stop.is_set():
            try:
                connection, _address = server.accept()
            except TimeoutError:
                continue
            connection.close()

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield server.getsockname()[1]
    stop.set()
    thread.join()
    server.close()


def probe_connects(targets: list[tuple[str, int]]) -> str:
    """Every connect at once (a dropped one waits out its 3 s), the outcomes in order.

    ``wait`` names the probes: a bare one waits for the job script's own log writer too."""
    probes = "".join(
        f'probe {CONNECT} {host} {port} > $TRAINYARD_DATA_OUT/probe-{index} & pids="$pids $!"\n'
        for index, (host, port) in enumerate(targets)
    )
    files = " ".join(f"$TRAINYARD_DATA_OUT/probe-{index}" for index in range(len(targets)))
    return f"{probes}wait $pids\ncat {files} >> $TRAINYARD_DATA_OUT/probes\n"


def connect_words(targets: list[tuple[str, int]]) -> list[str]:
    return [f"{CONNECT} {host} {port}" for host, port in targets]


def listening_ports() -> set[int]:
    """Every TCP port something on the host listens on (slurmctld, slurmd, web servers ...)."""
    ports = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            if fields[3] == "0A":  # LISTEN
                ports.add(int(fields[1].rsplit(":", 1)[1], 16))
    return ports


# Many connections at once, each refused or timed out: one line per target, in order.
PARALLEL_CONNECT = """python3 - {targets} > $TRAINYARD_DATA_OUT/parallel <<'EOF'
import socket, sys
from concurrent.futures import ThreadPoolExecutor
def reach(target):
    host, port = target.rsplit(":", 1)
    try:
        socket.create_connection((host, int(port)), 2).close()
        return "allowed " + target
    except OSError:
        return "denied " + target
with ThreadPoolExecutor(64) as pool:
    print("\\n".join(pool.map(reach, sys.argv[1:])))
EOF"""


def test_job_reaches_no_service_of_the_host_or_the_platform_on_any_address(site, host_listener):
    db = connection.settings_dict
    database = (db.get("HOST") or "127.0.0.1", int(db.get("PORT") or 5432))
    redis = service_address(settings.REDIS_URL or "redis://127.0.0.1:6379", 6379)
    targets = [(address, host_listener) for address in host_addresses()]
    targets += [database, redis]
    for address in host_addresses():  # where CI makes them listen too (a second address)
        targets += [(address, database[1]), (address, redis[1])]
    targets = sorted(set(targets))
    job = site.run(PROBE + probe_connects(targets))
    assert job.state == Job.State.SUCCEEDED, job.state_reason
    assert output(job, "probes").splitlines() == outcomes("denied", connect_words(targets))
    assert_platform_fine(site)


def test_job_reaches_no_port_the_host_listens_on_at_any_address(site):
    """Whatever listens (slurmctld and slurmd of the dev cluster, other tests' servers)."""
    targets = sorted(f"{a}:{p}" for a in host_addresses() for p in listening_ports())
    job = site.run(PARALLEL_CONNECT.format(targets=" ".join(targets)))
    assert job.state == Job.State.SUCCEEDED, job.state_reason
    assert output(job, "parallel").splitlines() == [f"denied {t}" for t in targets]


BIND = (
    'python3 -c \'import socket,sys,time; s=socket.create_server(("0.0.0.0", int(sys.argv[1])));'
    ' open("/trainyard/output/bound","w").close(); time.sleep(30)\' {port}'
)


def test_job_cannot_take_a_port_of_the_host(site):
    with socket.socket() as probe:
        probe.bind(("0.0.0.0", 0))
        port = probe.getsockname()[1]
    job = site.wait(site.start(BIND.format(port=port)), Job.State.RUNNING)
    wait_until(
        (replica_output_dir(storage_name(site.node), job.pk, 0) / "bound").exists,
        what="the job's bind",
        timeout=30,
    )
    # The port is still the host's: the job bound it in a network of its own.
    with socket.create_server(("0.0.0.0", port)):
        pass


SERVE = """echo hello > /trainyard/output/index.html
echo $TRAINYARD_PORT_6006 > /trainyard/output/port
python3 -m http.server 6006 -d /trainyard/output"""


def test_an_open_port_is_published_at_its_host_port(site):
    job = cpu_job(SERVE)
    JobPort.objects.create(job=job, port=6006)
    job = site.wait(place(job, [site.node]), Job.State.RUNNING)
    host_port = PortAllocation.objects.get(replica__job=job, job_port=6006).host_port
    assert host_port != 6006
    for address in [a for a in host_addresses() if not a.startswith("10.213.")] or ["127.0.0.1"]:
        url = f"http://{address}:{host_port}/index.html"
        body = wait_until(lambda url=url: _get(url), what=f"{url} to answer", timeout=30)
        assert body == b"hello\n"
    # The job is told where outsiders reach it.
    assert output(job, "port") == f"{host_port}\n"


def _connects(host: str, port: int) -> bool:
    try:
        socket.create_connection((host, port), 2).close()
    except OSError:
        return False
    return True


def _get(url: str) -> bytes | None:
    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            return response.read()
    except OSError:
        return None


NEIGHBOUR = """echo up
python3 -c 'import socket,threading
def serve(port):
    s = socket.create_server(("0.0.0.0", port))
    while True:
        s.accept()[0].close()
for port in (7000, 7001):
    threading.Thread(target=serve, args=(port,)).start()'"""


def test_a_job_reaches_another_job_only_at_its_published_ports(site):
    neighbour = cpu_job(NEIGHBOUR)
    JobPort.objects.create(job=neighbour, port=7000)
    neighbour = site.wait(place(neighbour, [site.node]), Job.State.RUNNING)
    published = PortAllocation.objects.get(replica__job=neighbour, job_port=7000).host_port
    wait_until(
        lambda: _connects(site.node.address, published), what="the neighbour's port", timeout=30
    )
    private = [(address, 7001) for address in host_addresses()]
    private += [(address, 7000) for address in host_addresses()]
    # Its own address in the job network, where it listens: closed to other jobs too.
    own_address = wait_until(
        lambda: attempts_of(neighbour)[0].address,
        what="the executor to record where the replica lives",
        timeout=30,
    )
    private += [(own_address, 7000), (own_address, 7001)]
    private = sorted(set(private))
    # As any client outside would: at the node's address (a loopback one is the job bridge's).
    allowed = [(reachable_address(site.node.address), published)]
    job = site.run(PROBE + probe_connects(private + allowed))
    assert job.state == Job.State.SUCCEEDED, job.state_reason
    assert output(job, "probes").splitlines() == (
        outcomes("denied", connect_words(private)) + outcomes("allowed", connect_words(allowed))
    )


def test_the_job_page_says_where_to_connect_to_an_open_port(agent, client):
    job = cpu_job(SERVE)
    JobPort.objects.create(job=job, port=6006)
    job = place(job, agent.nodes[:1])
    wait_for_state(job, Job.State.RUNNING, agent)
    host_port = PortAllocation.objects.get(replica__job=job, job_port=6006).host_port
    client.force_login(job.owner)
    page = client.get(f"/jobs/{job.pk}/").content.decode()
    assert f"<code>{agent.nodes[0].address}:{host_port}</code>" in page
