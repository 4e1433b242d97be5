"""Memory and CPU limits of a replica: a cgroup v2 where one is writable, else rlimits.

A cgroup limits the resident memory of the whole replica (and everything it
starts); ``RLIMIT_AS`` (what ``prlimit`` sets) only bounds each process's
address space, the best a host without a writable cgroup v2 offers.
"""

from __future__ import annotations

import contextlib
import math
import os
from pathlib import Path

CGROUP_ROOT = Path("/sys/fs/cgroup")
CGROUP_PARENT = "trainyard"


def cgroup_v2_available() -> bool:
    controllers = CGROUP_ROOT / "cgroup.controllers"
    try:
        return "memory" in controllers.read_text().split() and os.access(CGROUP_ROOT, os.W_OK)
    except OSError:
        return False


def attempt_cgroup(*, node_name: str, attempt_id: int, memory_bytes: int) -> Path | None:
    """A cgroup with ``memory.max`` for the attempt, or None where cgroup v2 is not writable."""
    if not cgroup_v2_available():
        return None
    try:
        parent = CGROUP_ROOT / CGROUP_PARENT
        parent.mkdir(exist_ok=True)
        _enable_memory_controller(CGROUP_ROOT)
        _enable_memory_controller(parent)
        group = parent / f"{node_name}-attempt-{attempt_id}"
        group.mkdir(exist_ok=True)
        (group / "memory.max").write_text(str(memory_bytes))
        (group / "memory.swap.max").write_text("0")
    except OSError:
        return None
    return group


def _enable_memory_controller(group: Path) -> None:
    control = group / "cgroup.subtree_control"
    if "memory" not in control.read_text().split():
        control.write_text("+memory")


def remove_cgroup(path: str | None) -> None:
    if path:
        with contextlib.suppress(OSError):
            os.rmdir(path)


def host_cpus() -> list[int]:
    return sorted(os.sched_getaffinity(0))


def choose_cpus(*, node_cpu_milli: int, request_milli: int, taken: set[int]) -> list[int] | None:
    """Cores to pin the replica to, or None when the node's cores are not this host's.

    Demo nodes declare more cores than the machine has; pinning is only
    meaningful when every core the node declares exists here.
    """
    available = host_cpus()
    node_cores = math.ceil(node_cpu_milli / 1000)
    if node_cores > len(available):
        return None
    wanted = max(1, math.ceil(request_milli / 1000))
    free = [cpu for cpu in available[:node_cores] if cpu not in taken]
    if len(free) < wanted:
        return None
    return free[:wanted]
