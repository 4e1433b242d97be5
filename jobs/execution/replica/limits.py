"""Memory, process and CPU limits of a replica.

Memory: a memory cgroup (v2 ``memory.max``, or v1 ``memory.limit_in_bytes``
on hosts that still mount the v1 hierarchy) limits the resident memory of the
whole replica, everything it starts and what it writes to its ``/tmp``
(tmpfs pages are charged to the cgroup); the kernel kills it when it goes
over and counts that kill (``oom_kill``), which becomes the attempt's reason.
``RLIMIT_AS`` only bounds each process's address space, so many processes
together can pass it: the fallback of a host without a writable memory cgroup.

Processes: ``RLIMIT_NPROC`` limits the processes and threads of the job's uid,
so a fork bomb fails with EAGAIN long before the node runs out of pids.
"""

from __future__ import annotations

import contextlib
import math
import os
from pathlib import Path

CGROUP_ROOT = Path("/sys/fs/cgroup")
CGROUP_V1_MEMORY = CGROUP_ROOT / "memory"
CGROUP_PARENT = "trainyard"
# Processes and threads per requested core (data loaders run a few threads per core
# each), and at least this many: enough for training, far below a node's pid_max.
PROCESSES_PER_CORE = 256
MIN_PROCESSES = 1024


def process_limit(cpu_milli: int) -> int:
    """``RLIMIT_NPROC`` of a replica asking for ``cpu_milli`` millicores."""
    return max(MIN_PROCESSES, math.ceil(cpu_milli / 1000) * PROCESSES_PER_CORE)


def cgroup_v2_available() -> bool:
    controllers = CGROUP_ROOT / "cgroup.controllers"
    try:
        return "memory" in controllers.read_text().split() and os.access(CGROUP_ROOT, os.W_OK)
    except OSError:
        return False


def cgroup_v1_available() -> bool:
    return os.access(CGROUP_V1_MEMORY / "memory.limit_in_bytes", os.W_OK)


def cgroup_name(*, node_name: str, attempt_id: int) -> str:
    return f"{node_name}-attempt-{attempt_id}"


def attempt_cgroup(*, node_name: str, attempt_id: int, memory_bytes: int) -> Path | None:
    """The attempt's memory cgroup, limited to ``memory_bytes``; None where none is writable."""
    name = cgroup_name(node_name=node_name, attempt_id=attempt_id)
    try:
        if cgroup_v2_available():
            return _cgroup_v2(name, memory_bytes)
        if cgroup_v1_available():
            return _cgroup_v1(name, memory_bytes)
    except OSError:
        return None
    return None


def _cgroup_v2(name: str, memory_bytes: int) -> Path:
    parent = CGROUP_ROOT / CGROUP_PARENT
    parent.mkdir(exist_ok=True)
    _enable_memory_controller(CGROUP_ROOT)
    _enable_memory_controller(parent)
    group = parent / name
    group.mkdir(exist_ok=True)
    (group / "memory.max").write_text(str(memory_bytes))
    (group / "memory.swap.max").write_text("0")
    return group


def _cgroup_v1(name: str, memory_bytes: int) -> Path:
    group = CGROUP_V1_MEMORY / CGROUP_PARENT / name
    group.mkdir(parents=True, exist_ok=True)
    (group / "memory.limit_in_bytes").write_text(str(memory_bytes))
    swap = group / "memory.memsw.limit_in_bytes"  # only with swap accounting; never above it
    if swap.exists():
        swap.write_text(str(memory_bytes))
    return group


def cgroup_label(path: str | None) -> str:
    """How the log's header names the memory limit in force."""
    if not path:
        return "RLIMIT_AS"
    if Path(path).is_relative_to(CGROUP_V1_MEMORY):
        return "cgroup v1 memory.limit_in_bytes"
    return "cgroup v2 memory.max"


def oom_kills(path: str | None) -> int:
    """How often the kernel killed a process of the cgroup for going over its memory limit.

    v2 counts in ``memory.events``, v1 in ``memory.oom_control``; both as ``oom_kill N``.
    """
    if not path:
        return 0
    for name in ("memory.events", "memory.oom_control"):
        with contextlib.suppress(OSError):
            for line in (Path(path) / name).read_text().splitlines():
                key, _space, value = line.partition(" ")
                if key == "oom_kill":
                    return int(value)
    return 0


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
