"""A network namespace of its own for the tests' Chromium, joined to the host by one veth.

Chromium aborts every request in flight with ``net::ERR_NETWORK_CHANGED`` when an
address or link of its network changes; on the test host, other workers' jobs add and
remove a veth pair each (seen failing a browser test's page). In a namespace of its own
Chromium sees only its end of the veth and reaches the live server at the host's end
under the name ``localhost`` (a trustworthy origin, as before).

The run's first process makes the namespace before any test and removes it after the
last (``tests/conftest.py``); its workers find it in ``ENVIRONMENT``. Made per worker, a
worker's veth left the host while other workers' job-network tests probed its address.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

# Point-to-point /30 blocks of this range, one per test run (by the first process's pid).
FIRST_OCTETS = (10, 252)
ENVIRONMENT = "TRAINYARD_TEST_BROWSER_NETWORK"  # "<namespace> <host address>"


@dataclass(frozen=True)
class BrowserNetwork:
    namespace: str | None  # None: the host's own network (not root, or no ``ip``)
    host_address: str  # the host's end of the veth: ``localhost`` to Chromium

    @classmethod
    def from_environment(cls) -> BrowserNetwork:
        namespace, _, address = os.environ.get(ENVIRONMENT, "").partition(" ")
        if not namespace:
            return cls(namespace=None, host_address="localhost")
        return cls(namespace=namespace, host_address=address)

    @property
    def listen_address(self) -> str:
        """Where the live server listens: the veth for Chromium, loopback for the CLI tests."""
        return "localhost" if self.namespace is None else "0.0.0.0"

    def launcher(self, folder: Path, chromium: str) -> str:
        """An executable that starts ``chromium`` in the namespace (Playwright's pipes pass)."""
        if self.namespace is None:
            return chromium
        script = folder / "chromium-in-namespace"
        # ``localhost`` still names the live server, so pages keep its trustworthy origin;
        # the port proxy's sites (``j<job>-<port>.jobs.localhost``) are the host's too.
        rules = (
            f"--host-resolver-rules=MAP localhost {self.host_address}, "
            f"MAP *.localhost {self.host_address}"
        )
        argv = shlex.join(["ip", "netns", "exec", self.namespace, chromium, rules])
        script.write_text(f'#!/bin/sh\nexec {argv} "$@"\n')
        script.chmod(0o755)
        return str(script)


def _ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True, text=True)


def _addresses(pid: int) -> tuple[str, str]:
    block = pid % (1 << 14)  # 16,384 blocks of four addresses in 10.252.0.0/16
    third, fourth = divmod(block * 4, 256)
    prefix = f"{FIRST_OCTETS[0]}.{FIRST_OCTETS[1]}.{third}"
    return f"{prefix}.{fourth + 1}", f"{prefix}.{fourth + 2}"


def browser_network_make() -> BrowserNetwork:
    """Make the namespace and its veth, and name them in ``ENVIRONMENT`` for the workers."""
    if os.geteuid() != 0 or shutil.which("ip") is None:
        return BrowserNetwork(namespace=None, host_address="localhost")
    _remove_stale()
    pid = os.getpid()
    namespace, host_end, browser_end = _names(pid)
    host_address, browser_address = _addresses(pid)
    try:
        _ip("netns", "add", namespace)
        _ip("link", "add", host_end, "type", "veth", "peer", "name", browser_end)
        _ip("link", "set", browser_end, "netns", namespace)
        _ip("addr", "add", f"{host_address}/30", "dev", host_end)
        _ip("link", "set", host_end, "up")
        inside = ("netns", "exec", namespace, "ip")
        _ip(*inside, "addr", "add", f"{browser_address}/30", "dev", browser_end)
        _ip(*inside, "link", "set", browser_end, "up")
        _ip(*inside, "link", "set", "lo", "up")
    except subprocess.CalledProcessError as error:
        browser_network_remove(BrowserNetwork(namespace=namespace, host_address=host_address))
        # Chromium then shares the host's network; the browser network's own test fails.
        print(f"NO NETWORK OF ITS OWN FOR CHROMIUM: {' '.join(error.cmd)}: {error.stderr}")
        return BrowserNetwork(namespace=None, host_address="localhost")
    os.environ[ENVIRONMENT] = f"{namespace} {host_address}"
    return BrowserNetwork(namespace=namespace, host_address=host_address)


def browser_network_remove(network: BrowserNetwork) -> None:
    if network.namespace is None:
        return
    _, host_end, _ = _names(int(network.namespace.removeprefix("tybrowser")))
    with contextlib.suppress(subprocess.CalledProcessError):
        _ip("link", "del", host_end)  # takes its peer in the namespace along
    with contextlib.suppress(subprocess.CalledProcessError):
        _ip("netns", "del", network.namespace)
    os.environ.pop(ENVIRONMENT, None)


def _remove_stale() -> None:
    """A run that was killed left its namespace: the next one in its /30 would clash."""
    for path in Path("/run/netns").glob("tybrowser*"):
        pid = path.name.removeprefix("tybrowser")
        if pid.isdigit() and not Path(f"/proc/{pid}").exists():
            browser_network_remove(BrowserNetwork(namespace=path.name, host_address=""))


def _names(pid: int) -> tuple[str, str, str]:
    return f"tybrowser{pid}", f"tybh{pid}", f"tybb{pid}"
