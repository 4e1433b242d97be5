"""Two stand-in hosts, each a network namespace with its own agent and job network.

What a multi-host site relies on (README, Production): each host's job subnet
is routed to the others', so a gang's replicas reach each other at their job
addresses on any port, while no job reaches the platform's machines. Here the
"LAN" is a bridge in the machine's own namespace and the platform (PostgreSQL,
Redis) listens on its second address (``deploy/test-host.sh`` sets that up).
"""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass
from urllib.parse import urlsplit, urlunsplit

import pytest

from jobs.models import Job
from tests.agent_support import cpu_job, make_node, place, wait_for_state
from tests.conftest import database_url_for_subprocess
from tests.test_agent_distributed import all_reduce_job, sums
from tests.test_hostile_jobs import PROBE, outcomes, output
from tests.test_job_network import connect_words, probe_connects

pytestmark = pytest.mark.integration

LAN_BRIDGE, LAN_GATEWAY = "tyhosts0", "10.251.0.1"
# Where the platform listens besides loopback (the second address of deploy/test-host.sh).
PLATFORM_ADDRESS = "10.250.0.1"


@dataclass(frozen=True)
class Host:
    netns: str
    address: str
    job_subnet: str


HOSTS = [
    Host("tyhostA", "10.251.0.2", "10.214.1.0/24"),
    Host("tyhostB", "10.251.0.3", "10.214.2.0/24"),
]


def sh(*argv: str, netns: str | None = None, env: dict | None = None) -> str:
    prefix = ["ip", "netns", "exec", netns] if netns else []
    result = subprocess.run(
        prefix + list(argv), capture_output=True, text=True, env=env, check=False, timeout=60
    )
    assert result.returncode == 0, f"{argv}: {result.stderr}"
    return result.stdout


def at(url: str, host: str) -> str:
    parts = urlsplit(url)
    netloc = parts.netloc.rsplit("@", 1)
    where = f"{host}:{parts.port}" if parts.port else host
    return urlunsplit(parts._replace(netloc=f"{netloc[0]}@{where}" if len(netloc) > 1 else where))


def remove_hosts() -> None:
    for index, host in enumerate(HOSTS):
        subprocess.run(["ip", "netns", "delete", host.netns], check=False, capture_output=True)
        subprocess.run(["ip", "link", "delete", f"tyh{index}"], check=False, capture_output=True)
    subprocess.run(["ip", "link", "delete", LAN_BRIDGE], check=False, capture_output=True)


@pytest.fixture
def two_hosts(agent_env):
    """Start an agent on each stand-in host; yields the agents and their nodes."""
    remove_hosts()  # what an interrupted run left
    sh("ip", "link", "add", LAN_BRIDGE, "type", "bridge")
    agents = []
    try:
        sh("ip", "addr", "add", f"{LAN_GATEWAY}/24", "dev", LAN_BRIDGE)
        sh("ip", "link", "set", LAN_BRIDGE, "up")
        for index, host in enumerate(HOSTS):
            sh("ip", "netns", "add", host.netns)
            sh(
                "ip",
                "link",
                "add",
                f"tyh{index}",
                "type",
                "veth",
                "peer",
                "name",
                "eth0",
                "netns",
                host.netns,
            )
            sh("ip", "link", "set", f"tyh{index}", "master", LAN_BRIDGE, "up")
            for command in (
                ["ip", "addr", "add", f"{host.address}/24", "dev", "eth0"],
                ["ip", "link", "set", "eth0", "up"],
                ["ip", "link", "set", "lo", "up"],
                ["ip", "route", "add", "default", "via", LAN_GATEWAY],
            ):
                sh(*command, netns=host.netns)
        database = at(database_url_for_subprocess(), PLATFORM_ADDRESS)
        check = subprocess.run(
            ["ip", "netns", "exec", HOSTS[0].netns, "pg_isready", "-h", PLATFORM_ADDRESS],
            capture_output=True,
            check=False,
        )
        if check.returncode != 0:
            pytest.fail(
                f"PostgreSQL does not listen on {PLATFORM_ADDRESS} (deploy/test-host.sh sets it up)"
            )
        for host in HOSTS:
            peers = [f"{h.job_subnet}={h.address}" for h in HOSTS if h is not host]
            env = {
                "DATABASE_URL": database,
                "REDIS_URL": at(
                    os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/0"), PLATFORM_ADDRESS
                ),
                "TRAINYARD_JOB_SUBNET": host.job_subnet,
                "TRAINYARD_JOB_PEER_SUBNETS": ",".join(peers),
            }
            sh(
                ".venv/bin/python",
                "manage.py",
                "job_network",
                "install",
                netns=host.netns,
                env={**os.environ, **env},
            )
            node = make_node(address=host.address)
            prefix = ["ip", "netns", "exec", host.netns]
            agents.append(agent_env([node], env=env, prefix=prefix, beat=not agents))
        yield agents
    finally:
        for agent in agents:  # a namespace lives on while a process is in it
            agent.stop()
            agent.kill_replicas()
        remove_hosts()


def test_a_gang_trains_across_two_hosts_and_neither_reaches_the_platform(two_hosts):
    agents = two_hosts
    nodes = [agent.nodes[0] for agent in agents]
    job = wait_for_state(place(all_reduce_job(), nodes), Job.FINAL_STATES, agents[0], timeout=180)
    assert job.state == Job.State.SUCCEEDED, job.state_reason + agents[1].logs()[-2000:]
    assert sums(job, nodes) == ["0 2 3.0", "1 2 3.0"]

    # The platform's machine, seen from a job on either host: closed.
    platform = [(PLATFORM_ADDRESS, 5432), (PLATFORM_ADDRESS, 6379), (LAN_GATEWAY, 5432)]
    for node, agent in zip(nodes, agents, strict=True):
        probe = place(cpu_job(PROBE + probe_connects(platform)), [node])
        probe = wait_for_state(probe, Job.FINAL_STATES, agent)
        assert probe.state == Job.State.SUCCEEDED, probe.state_reason
        assert output(probe, "probes").splitlines() == outcomes("denied", connect_words(platform))
