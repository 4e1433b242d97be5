"""A network of its own for every replica: a namespace on the host's job bridge, behind nftables.

What a replica reaches, and what reaches it:

- **Nothing of the host.** Everything arriving from the job bridge for one of
  the host's own addresses (127.0.0.1, the node's addresses, the bridge's) is
  dropped, except replies to connections the host opened. A replica's
  ``127.0.0.1`` is its own namespace's loopback.
- **Nothing of the platform elsewhere.** Forwarded traffic to the addresses
  in ``DATABASE_URL``, ``REDIS_URL``, ``ALLOWED_HOSTS``, link-local (cloud
  metadata) and ``TRAINYARD_PLATFORM_ADDRESSES`` is dropped.
- **The outside world** where ``TRAINYARD_JOB_EGRESS`` allows (default on),
  masqueraded to the host's address.
- **Its own gang**: the other replicas of the same attempt, at their job
  addresses on any port (gloo opens ports of its own); each node's job subnet
  is routed to the others' (``TRAINYARD_JOB_PEER_SUBNETS``).
- **Its open ports**, published on the host at the allocated host ports
  (DNAT from ``@published``, for outside clients, local ones and other jobs
  alike); the replica sees them arrive from the bridge's address. Another
  job's unpublished ports, or its job address, are closed to it: inside each
  namespace a table of the agent's accepts new connections only to the open
  ports (from the bridge) and from the gang. The job cannot change it: it has
  no capability in its namespace.

The host part (bridge, forwarding, the ``inet trainyard`` table:
``host_network.py``) is installed once by ``manage.py job_network install``
(``make run`` and ``.ci/run`` call it as root) and checked before every
replica start: without it, no replica starts. The replica part is made in
``replica_network_up`` before the runner starts and removed in
``replica_network_down`` when the attempt ends.
"""

from __future__ import annotations

import contextlib
import ipaddress
import re
import subprocess
from pathlib import Path

from jobs.execution.node_settings import settings

from .slots import job_subnet
from .tools import find_tool

TABLE = "trainyard"
NETNS_DIR = Path("/run/netns")
INSIDE_DEVICE = "eth0"
COMMAND_TIMEOUT = 10


class NetworkError(Exception):
    """The host's or a replica's network could not be made; the message says what failed."""


def bridge() -> str:
    return settings.TRAINYARD_JOB_BRIDGE


def gateway() -> str:
    return str(job_subnet()[1])


# A plain class, not a dataclass: the keeper imports this module on every replica's start,
# and ``dataclasses`` (with ``inspect``) would be a sixth of the keeper's CPU there.
class ReplicaNetwork:
    """What the agent made for one replica, kept in its spec to remove it again."""

    def __init__(
        self,
        *,
        namespace: str,
        slot: int,
        address: str,
        published: dict[int, int] | None = None,  # host port → port inside the replica
        gang: list[str] | None = None,
    ) -> None:
        self.namespace = namespace
        self.slot = slot
        self.address = address
        self.published = published or {}
        self.gang = gang or []

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ReplicaNetwork) and self.as_dict() == other.as_dict()

    @property
    def netns_path(self) -> str:
        return str(NETNS_DIR / self.namespace)

    def as_dict(self) -> dict:
        return {
            "namespace": self.namespace,
            "slot": self.slot,
            "address": self.address,
            "published": {str(k): v for k, v in self.published.items()},
            "gang": self.gang,
        }

    @classmethod
    def from_dict(cls, data: dict) -> ReplicaNetwork:
        return cls(
            namespace=data["namespace"],
            slot=int(data["slot"]),
            address=data["address"],
            published={int(k): int(v) for k, v in data.get("published", {}).items()},
            gang=list(data.get("gang", [])),
        )


def namespace_name(slot: int, attempt_id: int) -> str:
    return f"ty-{slot}-a{attempt_id}"


def enter_argv(network: ReplicaNetwork) -> list[str]:
    """The prefix that runs a phase inside the replica's namespace."""
    return ["nsenter", f"--net={network.netns_path}", "--"]


def replica_network_up(network: ReplicaNetwork) -> None:
    """Namespace, veth on the bridge, address, routes, its own table, its published ports."""
    _remove_stale(network.slot)
    host_end = f"tyv{network.slot}"
    try:
        # One ``ip`` for the namespace and the host's end of its link: each process counts
        # on every start (docs/slurm-placement.md, step 6).
        run(["ip", "-batch", "-"], stdin=_host_link_batch(network, host_end))
        run(["ip", "-n", network.namespace, "-batch", "-"], stdin=_inside_batch(network))
        run([*enter_argv(network), "nft", "-f", "-"], stdin=_inside_ruleset(network))
        publish(network)
    except NetworkError:
        replica_network_down(network)
        raise


def replica_network_down(network: ReplicaNetwork) -> None:
    """Remove what ``replica_network_up`` made (the veth goes with the namespace); idempotent."""
    unpublish(network)
    if (NETNS_DIR / network.namespace).exists():
        with contextlib.suppress(NetworkError):
            run(["ip", "netns", "delete", network.namespace])


def publish(network: ReplicaNetwork) -> None:
    """Map the replica's host ports to it, replacing what an ended replica left on them.

    The platform gave these host ports to this replica: a mapping still there
    is stale (its replica's agent died before unpublishing it).
    """
    if not network.published:
        return
    stale = [port for port in published_mappings() if port in network.published]
    script = "".join(
        f"delete element inet {TABLE} published {{ tcp . {port} }}\n" for port in stale
    )
    script += "".join(
        f"add element inet {TABLE} published {{ tcp . {host} : {network.address} . {inside} }}\n"
        for host, inside in network.published.items()
    )
    run(["nft", "-f", "-"], stdin=script)


def published_mappings() -> dict[int, str]:
    """Host port → ``address . port`` of every published port on this host."""
    listed = run_output(["nft", "list", "map", "inet", TABLE, "published"])
    found = {}
    for match in re.finditer(r"tcp \. (\d+) : ([\d.]+) \. (\d+)", listed):
        found[int(match[1])] = f"{match[2]} . {match[3]}"
    return found


def unpublish(network: ReplicaNetwork) -> None:
    """Remove the replica's own mappings; a port given to another replica since stays."""
    if not network.published:
        return
    current = published_mappings()
    mine = [
        host
        for host, inside in network.published.items()
        if current.get(host) == f"{network.address} . {inside}"
    ]
    if mine:
        script = "".join(
            f"delete element inet {TABLE} published {{ tcp . {host} }}\n" for host in mine
        )
        with contextlib.suppress(NetworkError):
            run(["nft", "-f", "-"], stdin=script)


def set_gang(network: ReplicaNetwork, addresses: list[str]) -> None:
    """Let exactly these gang members' addresses open connections to the replica."""
    wanted = sorted(set(addresses) - {network.address})
    if wanted == sorted(network.gang):
        return
    commands = "flush set inet replica gang\n"
    if wanted:
        commands += f"add element inet replica gang {{ {', '.join(wanted)} }}\n"
    run([*enter_argv(network), "nft", "-f", "-"], stdin=commands)
    network.gang = wanted


def reachable_address(address: str) -> str:
    """How a replica reaches a node: loopback means this host, which it reaches at the bridge."""
    try:
        if ipaddress.ip_address(address).is_loopback:
            return gateway()
    except ValueError:
        if address == "localhost":
            return gateway()
    return address


def _host_link_batch(network: ReplicaNetwork, host_end: str) -> str:
    return (
        f"netns add {network.namespace}\n"
        f"link add {host_end} type veth peer name {INSIDE_DEVICE} netns {network.namespace}\n"
        f"link set {host_end} master {bridge()}\n"
        # Hairpin: a replica reaches its own published ports through the host too.
        f"link set {host_end} type bridge_slave hairpin on\n"
        f"link set {host_end} up\n"
    )


def _inside_batch(network: ReplicaNetwork) -> str:
    prefix = job_subnet().prefixlen
    return (
        "link set lo up\n"
        f"addr add {network.address}/{prefix} dev {INSIDE_DEVICE}\n"
        f"link set {INSIDE_DEVICE} up\n"
        f"route add default via {gateway()}\n"
    )


def _inside_ruleset(network: ReplicaNetwork) -> str:
    ports = sorted(set(network.published.values()))
    open_ports = f"elements = {{ {', '.join(map(str, ports))} }}" if ports else ""
    gang = f"elements = {{ {', '.join(network.gang)} }}" if network.gang else ""
    return f"""table inet replica {{
    set open {{ type inet_service; {open_ports} }}
    set gang {{ type ipv4_addr; {gang} }}
    chain input {{
        type filter hook input priority filter; policy drop;
        ct state established,related accept
        iif lo accept
        ip saddr {gateway()} tcp dport @open accept
        ip saddr @gang accept
    }}
}}
"""


def _remove_stale(slot: int) -> None:
    """A namespace left by an earlier holder of the slot (its agent never cleaned up)."""
    if NETNS_DIR.is_dir():
        for entry in NETNS_DIR.iterdir():
            if entry.name.startswith(f"ty-{slot}-"):
                with contextlib.suppress(NetworkError):
                    run(["ip", "netns", "delete", entry.name])
    if Path(f"/sys/class/net/tyv{slot}").exists():
        with contextlib.suppress(NetworkError):
            run(["ip", "link", "delete", f"tyv{slot}"])


def missing_tools() -> list[str]:
    return [tool for tool in ("ip", "nft", "nsenter") if not find_tool(tool)]


def require_tools() -> None:
    missing = missing_tools()
    if missing:
        raise NetworkError(f"not installed: {', '.join(missing)}")


def sysctl(name: str, value: str) -> None:
    Path("/proc/sys", *name.split(".")).write_text(value)


def run_output(argv: list[str]) -> str:
    """What a query printed; empty when it failed (a missing table lists nothing)."""
    try:
        result = subprocess.run(
            argv, capture_output=True, text=True, timeout=COMMAND_TIMEOUT, check=False
        )
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return result.stdout if result.returncode == 0 else ""


def run(argv: list[str], *, stdin: str | None = None) -> None:
    try:
        result = subprocess.run(
            argv,
            input=stdin,
            capture_output=True,
            text=True,
            timeout=COMMAND_TIMEOUT,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as error:
        raise NetworkError(f"{argv[0]}: {error}") from error
    if result.returncode != 0:
        raise NetworkError(f"{' '.join(argv[:4])}: {result.stderr.strip()[:300]}")
