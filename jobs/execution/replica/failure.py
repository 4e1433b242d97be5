"""Why a replica failed, in words a person can act on.

The exit code and the log's last lines say what the program saw, and come
first: the user's error. Then two causes it cannot report itself: the kernel
killed it for going over its memory limit (the cgroup counts that), or the
disk holding its output and log is full (its own complaints could not even
reach the log). The lines the platform wrote into the log (the sandbox banner,
"replica finished") are left out of the tail; the line of the command that
failed stays.
"""

from __future__ import annotations

import contextlib
import re
import shutil
from pathlib import Path

from core.reasons import Reason
from jobs.execution.files import log_tail, replica_output_dir
from jobs.models import ReplicaAttempt
from resources.ratios import mib_to_gib

from . import limits
from .folder import AttemptFolder

FAILURE_TAIL_LINES = 20
# The platform's own lines in a log, read past to find the job's (the banner is 2 lines,
# "replica finished" 1); a job may print the prefix too, and only hides its own lines.
PLATFORM_LINE = re.compile(r"^\[trainyard\] (?!line \d+ failed with exit code)")
PLATFORM_LINES_READ = 8
SUMMARY = re.compile(r"^exit code (\d+)(?: \((SIG\w+)\))?$|^killed by (SIG\w+)$")
# Less than this left for the job's uid counts as full: writes fail long before 0 on
# most file systems, and the runner frees its small reserve before writing the end.
FULL_DISK_BYTES = 1024 * 1024
MIB = 1024 * 1024


def isolation_refusal(node_name: str, problem: str) -> Reason:
    """Why no replica starts on a node that cannot isolate jobs, and how an admin fixes it."""
    return Reason("isolation", {"node": node_name, "problem": problem})


def failure_reason(folder: AttemptFolder, attempt: ReplicaAttempt, exit_info: dict) -> Reason:
    job = attempt.replica.job
    causes = []
    if limits.oom_kills((folder.read("spec") or {}).get("cgroup")):
        causes.append(Reason("oom", {"limit": mib_to_gib(job.memory_mib)}))
    output = replica_output_dir(folder.node_name, job.pk, attempt.replica.index)
    full = disk_full_reason(folder.node_name, [output, folder.path])
    if full:
        causes.append(full)
    return exited_reason(exit_info["summary"], folder.log, causes=causes)


def exited_reason(summary: str, log: Path, *, causes: list[Reason] = ()) -> Reason:
    """The exit as the runner worded it, then ``causes``, then the job's last lines."""
    return Reason(
        "exited",
        {"summary": summary_reason(summary), "causes": list(causes), "tail": job_tail(log)},
    )


def summary_reason(summary: str) -> Reason:
    """The runner's ``exit code 137 (SIGKILL)`` / ``killed by SIGTERM``, as a reason."""
    match = SUMMARY.match(summary)
    if match is None:
        return Reason("text", {"text": summary})
    code, signal, killed_by = match.groups()
    if killed_by:
        return Reason("exit.killed", {"signal": killed_by})
    if signal:
        return Reason("exit.signal", {"code": int(code), "signal": signal})
    return Reason("exit.code", {"code": int(code)})


def job_tail(log: Path) -> str:
    """The log's last lines that the job wrote (the platform's banner and end left out)."""
    lines = log_tail(log, lines=FAILURE_TAIL_LINES + PLATFORM_LINES_READ).splitlines()
    return "\n".join(
        [line for line in lines if not PLATFORM_LINE.match(line)][-FAILURE_TAIL_LINES:]
    )


def disk_full_reason(node_name: str, paths: list[Path]) -> Reason | None:
    """Why, when the file system of one of ``paths`` (on node ``node_name``) is full."""
    for path in paths:
        with contextlib.suppress(OSError):
            usage = shutil.disk_usage(path)
            if usage.free < FULL_DISK_BYTES:
                return Reason(
                    "disk_full",
                    {"free": usage.free // MIB, "total": usage.total // MIB, "node": node_name},
                )
    return None


def storage_reason(storage: dict) -> Reason:
    """Why a replica that wrote past its storage was ended (``storage.json`` of its runner)."""
    gib = 1024**3
    return Reason(
        "storage",
        {
            "used": f"{storage['used_bytes'] / gib:.1f}",
            "limit": f"{storage['limit_bytes'] / gib:g}",
        },
    )
