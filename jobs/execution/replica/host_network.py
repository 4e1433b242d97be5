"""The host's part of the job network: the bridge, forwarding and the ``inet trainyard`` table.

Installed once per host by ``manage.py job_network install`` (``make run`` and
``.ci/run`` run it as root); ``host_problem`` is what the agent checks before
every replica start. What the rules allow is described in ``network.py``.
"""

from __future__ import annotations

import contextlib
import ipaddress
import os
import stat
import time
from pathlib import Path
from urllib.parse import urlsplit

from jobs.execution.node_settings import settings

from .network import (
    TABLE,
    NetworkError,
    bridge,
    gateway,
    missing_tools,
    published_mappings,
    require_tools,
    run,
    run_output,
    sysctl,
)
from .slots import job_subnet


def platform_addresses() -> list[str]:
    """Addresses a job must never reach beyond its host (the host's own are all closed)."""
    names = [urlsplit(url).hostname for url in (settings.DATABASE_URL, settings.REDIS_URL) if url]
    names += [h.strip("[]") for h in settings.ALLOWED_HOSTS if h not in ("*",) and "*" not in h]
    names += slurm_controllers()
    found = {ipaddress.IPv4Network("169.254.0.0/16")}
    for entry in [*names, *settings.TRAINYARD_PLATFORM_ADDRESSES]:
        if not entry or entry.startswith("."):
            continue
        try:
            candidates = [entry] if _is_network(entry) else _resolve(entry)
        except OSError:
            continue
        for candidate in candidates:
            net = ipaddress.ip_network(candidate, strict=False)
            if net.version == 4:
                found.add(net)
    return [str(net) for net in ipaddress.collapse_addresses(found)]


def slurm_controllers() -> list[str]:
    """The hosts ``SlurmctldHost`` names in the site's slurm.conf (``name(address)``: both)."""
    if not settings.TRAINYARD_SLURM_ENABLED or not settings.TRAINYARD_SLURM_CONF:
        return []
    try:
        lines = Path(settings.TRAINYARD_SLURM_CONF).read_text().splitlines()
    except OSError:
        return []
    hosts = []
    for line in lines:
        key, _sep, value = line.split("#", 1)[0].strip().partition("=")
        if key.strip().lower() in ("slurmctldhost", "controlmachine", "controladdr") and value:
            name, _open, address = value.strip().rstrip(")").partition("(")
            hosts += [host for host in (name, address) if host]
    return hosts


def _is_network(text: str) -> bool:
    try:
        ipaddress.ip_network(text, strict=False)
    except ValueError:
        return False
    return True


def _resolve(name: str) -> list[str]:
    import socket  # here, not above: every Slurm replica's keeper imports this module

    return sorted({info[4][0] for info in socket.getaddrinfo(name, None, proto=socket.IPPROTO_TCP)})


def peer_routes() -> list[tuple[str, str]]:
    """(subnet, via) of the other hosts' job subnets: ``TRAINYARD_JOB_PEER_SUBNETS``."""
    routes = []
    for entry in settings.TRAINYARD_JOB_PEER_SUBNETS:
        subnet, _sep, via = entry.partition("=")
        routes.append((str(ipaddress.IPv4Network(subnet)), via))
    return routes


def host_ruleset() -> str:
    subnet = str(job_subnet())
    networks = ", ".join([subnet, *(peer for peer, _via in peer_routes())])
    platform = ", ".join(platform_addresses())
    egress = (
        ""
        if settings.TRAINYARD_JOB_EGRESS
        else (f'        iifname "{bridge()}" ip daddr != {{ {networks} }} drop\n')
    )
    return f"""table inet {TABLE}
delete table inet {TABLE}
table inet {TABLE} {{
    map published {{ type inet_proto . inet_service : ipv4_addr . inet_service; }}
    set platform {{ type ipv4_addr; flags interval; elements = {{ {platform} }} }}
    chain prerouting {{
        type nat hook prerouting priority dstnat;
        fib daddr type local dnat ip to meta l4proto . th dport map @published
    }}
    chain output {{
        type nat hook output priority -100;
        fib daddr type local dnat ip to meta l4proto . th dport map @published
    }}
    chain postrouting {{
        type nat hook postrouting priority srcnat;
        oifname "{bridge()}" ct status dnat masquerade
        ip saddr {subnet} ip daddr != {{ {networks} }} oifname != "{bridge()}" masquerade
    }}
    chain input {{
        type filter hook input priority filter;
        iifname "{bridge()}" ct state established,related accept
        iifname "{bridge()}" drop
    }}
    chain forward {{
        type filter hook forward priority filter;
        iifname "{bridge()}" ip daddr @platform drop
        iifname "{bridge()}" meta nfproto ipv6 drop
{egress}    }}
}}
"""


def install_host() -> None:
    """Make the bridge, turn on forwarding and (re)load the host's table; idempotent.

    The ports running replicas have published are carried into the new table
    in the same transaction: installing again (every ``make run``) breaks no
    running job's ports.
    """
    require_tools()
    subnet = job_subnet()
    if not Path(f"/sys/class/net/{bridge()}").exists():
        run(["ip", "link", "add", bridge(), "type", "bridge"])
    run(["ip", "addr", "replace", f"{gateway()}/{subnet.prefixlen}", "dev", bridge()])
    run(["ip", "link", "set", bridge(), "up"])
    sysctl("net.ipv4.ip_forward", "1")
    # Loopback clients of published ports: their packets leave through the bridge.
    sysctl(f"net.ipv4.conf.{bridge()}.route_localnet", "1")
    kept = "".join(
        f"add element inet {TABLE} published {{ tcp . {port} : {target} }}\n"
        for port, target in published_mappings().items()
    )
    run(["nft", "-f", "-"], stdin=host_ruleset() + kept)
    for peer, via in peer_routes():
        if via:
            run(["ip", "route", "replace", peer, "via", via])


def remove_host() -> None:
    with contextlib.suppress(NetworkError):
        run(["nft", "delete", "table", "inet", TABLE])
    if Path(f"/sys/class/net/{bridge()}").exists():
        run(["ip", "link", "delete", bridge()])


def host_problem() -> str | None:
    """Why this host cannot give replicas networks of their own, or None when it can."""
    missing = missing_tools()
    if missing:
        return f"{', '.join(missing)} not installed (Debian: iproute2, nftables, util-linux)"
    if not Path(f"/sys/class/net/{bridge()}").exists():
        return f"the job bridge {bridge()} does not exist (run manage.py job_network install)"
    if f'iifname "{bridge()}" drop' not in run_output(
        ["nft", "list", "chain", "inet", TABLE, "input"]
    ):
        return f"the nftables table inet {TABLE} is missing (run manage.py job_network install)"
    return None


def recent_host_problem(run_dir: Path, within: float) -> str | None:
    """``host_problem``, asked at most once in ``within`` seconds by all of a host's
    short-lived processes (a Slurm replica's keeper lives for one replica; the check runs
    ``nft``): a fresh mark of root's in ``run_dir`` stands for a check that found nothing
    wrong. The local agent keeps the same answer as long in its memory (``sandbox``)."""
    mark = run_dir / f"host-checked-{bridge()}"
    with contextlib.suppress(OSError):
        info = os.lstat(mark)
        age = time.time() - info.st_mtime
        if stat.S_ISREG(info.st_mode) and info.st_uid == 0 and 0 <= age < within:
            return None
    problem = host_problem()
    if problem is None:
        with contextlib.suppress(OSError):  # without a mark the next process checks again
            run_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
            with contextlib.suppress(FileNotFoundError):
                mark.unlink()  # a new file, whatever was there: never written through a link
            flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
            os.close(os.open(mark, flags, 0o600))
    return problem
