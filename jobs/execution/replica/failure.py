"""Why a replica failed, in words a person can act on.

The exit code and the log's last lines say what the program saw; two causes
it cannot report itself come first: the kernel killed it for going over its
memory limit (the cgroup counts that), or the disk holding its output and log
is full (its own complaints could not even reach the log).
"""

from __future__ import annotations

import contextlib
import shutil
from pathlib import Path

from django.utils.translation import gettext as _

from jobs.execution.files import log_tail, replica_output_dir
from jobs.models import ReplicaAttempt
from resources.ratios import mib_to_gib

from . import limits
from .folder import AttemptFolder

FAILURE_TAIL_LINES = 20
# Less than this left for the job's uid counts as full: writes fail long before 0 on
# most file systems, and the runner frees its small reserve before writing the end.
FULL_DISK_BYTES = 1024 * 1024
MIB = 1024 * 1024


def isolation_refusal(node_name: str, problem: str) -> str:
    """Why no replica starts on a node that cannot isolate jobs, and how an admin fixes it."""
    return _(
        "Node %(node)s cannot isolate jobs: %(problem)s. An admin installs bubblewrap "
        "and nftables and runs `manage.py job_network install` as root (make run does)."
    ) % {"node": node_name, "problem": problem}


def failure_reason(folder: AttemptFolder, attempt: ReplicaAttempt, exit_info: dict) -> str:
    job = attempt.replica.job
    causes = []
    if limits.oom_kills((folder.read("spec") or {}).get("cgroup")):
        causes.append(
            _("Out of memory: the replica went over its memory limit of %(limit)s GiB.")
            % {"limit": mib_to_gib(job.memory_mib)}
        )
    output = replica_output_dir(folder.node_name, job.pk, attempt.replica.index)
    full = disk_full_reason(folder.node_name, [output, folder.path])
    if full:
        causes.append(full)
    causes.append(exited_reason(exit_info["summary"], folder.log))
    return " ".join(causes)


def exited_reason(summary: str, log: Path) -> str:
    """The exit as the runner worded it, and the log's last lines (both executors)."""
    return _("Exited with %(summary)s. Last lines of the log:\n%(tail)s") % {
        "summary": summary,
        "tail": log_tail(log, lines=FAILURE_TAIL_LINES),
    }


def disk_full_reason(node_name: str, paths: list[Path]) -> str:
    """Why, when the file system of one of ``paths`` (on node ``node_name``) is full; else ""."""
    for path in paths:
        with contextlib.suppress(OSError):
            usage = shutil.disk_usage(path)
            if usage.free < FULL_DISK_BYTES:
                return _(
                    "Disk full: %(free)s MiB of %(total)s MiB free on node %(node)s, "
                    "where the job writes its output and log."
                ) % {"free": usage.free // MIB, "total": usage.total // MIB, "node": node_name}
    return ""


def storage_reason(storage: dict) -> str:
    """Why a replica that wrote past its storage was ended (``storage.json`` of its runner)."""
    gib = 1024**3
    return _(
        "Storage limit exceeded: %(used).1f GiB written of %(limit)g GiB "
        "(its output folder, /tmp and /dev/shm together)."
    ) % {"used": storage["used_bytes"] / gib, "limit": storage["limit_bytes"] / gib}
