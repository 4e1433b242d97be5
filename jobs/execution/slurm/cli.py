"""Slurm's command-line tools, and what they say, as Python values.

Every call has a timeout. A controller that does not answer (down, restarting,
overloaded) raises ``SlurmUnavailable``: callers leave things as they are and
try again on the next pass, so a briefly unreachable ``slurmctld`` loses
nothing. A command that ran and was refused raises ``SlurmRefused`` with
Slurm's message.

The node list comes from ``sinfo --json`` (Slurm 21.08 and later), with what
Slurm has allocated on each node (``alloc_cpus``, ``alloc_memory`` in MiB and
``gres_used`` such as ``gpu:v100:2(IDX:0-1)``, as 22.05 prints them). The job
list comes from ``squeue --Format``: Slurm 22.05's ``--json`` prints every job
the controller keeps, with every field (about 5 KB a job: megabytes once a few
hundred jobs ended in the last ``MinJobAge``), whatever the filters; the plain
columns we need are a fiftieth of that. Both are filtered here.
"""

from __future__ import annotations

import json
import logging
import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from django.conf import settings

logger = logging.getLogger(__name__)

# Words in Slurm's messages that mean "the controller did not answer", not "no".
UNREACHABLE_MARKERS = (
    "unable to contact slurm controller",
    "socket timed out",
    "connection refused",
    "communication connection failure",
    "zero bytes were transmitted",
    "slurm_receive_msg",
    "slurmctld is not responding",
)


class SlurmUnavailable(Exception):
    """The controller did not answer, or a tool is missing; try again later."""


class SlurmRefused(Exception):
    """Slurm answered and refused (bad request, unknown job, …)."""


def run(tool: str, args: list[str], *, input_text: str | None = None, env: dict | None = None):
    """Run a Slurm tool and return its standard output."""
    argv = [_tool_path(tool), *args]
    try:
        result = subprocess.run(
            argv,
            input=input_text,
            capture_output=True,
            text=True,
            env=tool_environment(env),
            timeout=settings.TRAINYARD_SLURM_COMMAND_TIMEOUT,
            check=False,
        )
    except FileNotFoundError as error:
        raise SlurmUnavailable(f"{tool} is not installed: {error}") from error
    except subprocess.TimeoutExpired as error:
        raise SlurmUnavailable(f"{tool} did not answer within {error.timeout} s") from error
    if result.returncode != 0:
        message = (result.stderr or result.stdout).strip()
        if any(marker in message.lower() for marker in UNREACHABLE_MARKERS):
            raise SlurmUnavailable(message)
        raise SlurmRefused(message or f"{tool} exited with {result.returncode}")
    return result.stdout


def _tool_path(tool: str) -> str:
    if settings.TRAINYARD_SLURM_BIN_DIR:
        return str(Path(settings.TRAINYARD_SLURM_BIN_DIR) / tool)
    return shutil.which(tool) or tool


def tool_environment(extra: dict | None) -> dict[str, str]:
    """The tools' environment: nothing of ours but the Slurm configuration path.

    ``sbatch --export=ALL`` hands exactly this environment to the job, so the
    platform's own variables (database, broker, secret key) never reach it.
    """
    env = {"PATH": os.defpath} if extra is None else dict(extra)
    if settings.TRAINYARD_SLURM_CONF:
        env["SLURM_CONF"] = str(settings.TRAINYARD_SLURM_CONF)
    return env


@dataclass(frozen=True)
class SlurmJob:
    job_id: str
    name: str
    state: str
    reason: str
    wait_status: int | None  # as waitpid() gives it: exit code << 8 | signal
    start_time: datetime | None
    end_time: datetime | None
    nodes: str
    priority: int = 0  # Slurm's, the higher the sooner
    partition: str = ""

    @property
    def exit_code(self) -> int | None:
        """The shell's view: the exit code, or 128 + the signal that killed it."""
        if self.wait_status is None:
            return None
        signal_number = self.wait_status & 0x7F
        return 128 + signal_number if signal_number else self.wait_status >> 8


@dataclass(frozen=True)
class SlurmNode:
    name: str
    state: str  # lower case base state: idle, mixed, allocated, down, …
    flags: tuple[str, ...]  # DRAIN, NOT_RESPONDING, MAINTENANCE, …
    reason: str
    cpus: int
    memory_mib: int
    tmp_disk_mib: int
    gres: str
    partitions: tuple[str, ...]
    address: str
    # What Slurm has given to jobs on the node now, whoever's they are.
    cpus_allocated: int = 0
    memory_allocated_mib: int = 0
    gpus_allocated: int = 0
    threads_per_core: int = 1


def run_json(tool: str, args: list[str]) -> dict:
    """A ``--json`` listing; one that reports errors is no answer at all.

    Slurm 22.05 exits 0 with ``"errors"`` and an empty list when the controller
    is down: taken at its word, every job would look gone and every node too.
    """
    data = json.loads(run(tool, ["--json", *args]))
    if data.get("errors"):
        raise SlurmUnavailable(f"{tool}: {data['errors']}")
    return data


# squeue's columns, "|" after each; the name last, as the only one that may hold a "|".
# ``exit_code`` is the wait status, as in the JSON (768: exit code 3; 9: killed by KILL).
JOB_COLUMNS = (
    "JobID",
    "State",
    "Reason",
    "exit_code",
    "StartTime",
    "EndTime",
    "NodeList",
    "PriorityLong",
    "Partition",
)
JOB_FORMAT = ",".join(f"{column}:|" for column in JOB_COLUMNS) + ",Name:"


def queue() -> dict[str, SlurmJob]:
    """Every job Slurm still knows (pending, running and recently ended), anyone's, by id."""
    output = run("squeue", ["--noheader", "--states=all", f"--Format={JOB_FORMAT}"])
    found = (parse_job_line(line) for line in output.splitlines())
    return {job.job_id: job for job in found if job}


def jobs(*, name_prefix: str) -> dict[str, SlurmJob]:
    """The jobs of ``queue`` whose names start with ``name_prefix``."""
    return {pk: job for pk, job in queue().items() if job.name.startswith(name_prefix)}


def parse_job_line(line: str) -> SlurmJob | None:
    """One line of ``squeue --Format=JOB_FORMAT``; None for a line that is not one."""
    fields = line.split("|", len(JOB_COLUMNS))
    if len(fields) != len(JOB_COLUMNS) + 1 or not fields[0].strip().isdigit():
        return None
    job_id, state, reason, wait_status, start, end, nodes, priority, partition, name = fields
    return SlurmJob(
        job_id=job_id.strip(),
        name=name,
        state=state.strip().split()[0] if state.strip() else "",
        reason="" if reason.strip() == "None" else reason.strip(),
        wait_status=int(wait_status) if wait_status.strip().isdigit() else None,
        start_time=_parse_local_time(start.strip()),
        end_time=_parse_local_time(end.strip()),
        nodes=nodes.strip(),
        priority=int(priority) if priority.strip().isdigit() else 0,
        partition=partition.strip(),
    )


def job_ids_named(name: str) -> list[str]:
    """Ids of every job with this exact name that Slurm still knows, oldest first."""
    output = run("squeue", ["--noheader", "--states=all", f"--name={name}", "--format=%i"])
    return sorted((line.strip() for line in output.splitlines() if line.strip()), key=int)


def finished_job(job_id: str) -> SlurmJob | None:
    """A job ``squeue`` forgot, from accounting (``sacct``) where the site keeps it."""
    try:
        output = run(
            "sacct",
            [
                "--noheader",
                "--parsable2",
                "--allocations",
                f"--jobs={job_id}",
                "--format=JobID,JobName,State,ExitCode,Start,End,NodeList",
            ],
        )
    except SlurmRefused:
        return None  # no accounting storage on this cluster
    for line in output.splitlines():
        fields = line.split("|")
        if len(fields) == 7 and fields[0] == job_id:
            code, _, signal_number = fields[3].partition(":")
            return SlurmJob(
                job_id=job_id,
                name=fields[1],
                state=fields[2].split()[0],
                reason="",
                wait_status=(int(code or 0) << 8) | int(signal_number or 0),
                start_time=_parse_local_time(fields[4]),
                end_time=_parse_local_time(fields[5]),
                nodes=fields[6],
            )
    return None


def nodes() -> list[SlurmNode]:
    data = run_json("sinfo", [])
    return [_node(raw) for raw in data.get("nodes", [])]


def submit(*, argv: list[str], script: str, env: dict[str, str]) -> str:
    """``sbatch`` the script; return the new job's id."""
    output = run("sbatch", ["--parsable", *argv], input_text=script, env=env)
    return output.strip().split(";")[0]


def cancel(job_ids: list[str]) -> None:
    """End the jobs: TERM, Slurm's KillWait, then KILL."""
    _scancel(job_ids)


def _scancel(args: list[str]) -> None:
    try:
        run("scancel", args)
    except SlurmRefused as error:
        # A job that already ended is what we wanted.
        if (
            "already completing or completed" not in str(error).lower()
            and "invalid job id" not in str(error).lower()
        ):
            raise


def _node(raw: dict) -> SlurmNode:
    state = _first(raw.get("state")).lower()
    flags = tuple(str(flag).upper() for flag in raw.get("state_flags") or [])
    if isinstance(raw.get("state"), list):  # newer Slurm: the flags are in the state list
        flags += tuple(str(s).upper() for s in raw["state"][1:])
    return SlurmNode(
        name=raw["name"],
        state=state,
        flags=flags,
        reason=raw.get("reason") or "",
        cpus=int(_number(raw.get("cpus"))),
        memory_mib=int(_number(raw.get("real_memory"))),
        tmp_disk_mib=int(_number(raw.get("temporary_disk"))),
        gres=raw.get("gres") or "",
        partitions=tuple(raw.get("partitions") or []),
        address=raw.get("address") or raw["name"],
        cpus_allocated=int(_number(raw.get("alloc_cpus"))),
        memory_allocated_mib=int(_number(raw.get("alloc_memory"))),
        gpus_allocated=sum(use.count for use in gres_used(raw.get("gres_used") or "")),
        threads_per_core=max(1, int(_number(raw.get("threads")) or 1)),
    )


@dataclass(frozen=True)
class GresUse:
    """One ``gpu`` entry of a node's ``gres_used``: its type ("" when untyped), the cards
    in use and their device indices (empty when Slurm prints ``N/A``)."""

    gpu_type: str
    count: int
    indices: tuple[int, ...]


# ``gpu:v100:2(IDX:0-1)``, ``gpu:2(IDX:0,2)``, ``gpu:a100:0(IDX:N/A)``; other gres (mps,
# shard) are not cards. An IDX list may hold commas, so entries are found, not split.
GRES_USED = re.compile(r"(?:^|,)gpu(?::([^:,()]+))?:(\d+)(?:\(([^)]*)\))?")


def gres_used(text: str) -> list[GresUse]:
    """The GPU entries of ``sinfo``'s ``gres_used`` (``scontrol show node``'s ``GresUsed``)."""
    return [
        GresUse(gpu_type=gpu_type or "", count=int(count), indices=_indices(detail or ""))
        for gpu_type, count, detail in GRES_USED.findall(text)
    ]


def _indices(detail: str) -> tuple[int, ...]:
    """``IDX:0-1,3`` → (0, 1, 3); ``IDX:N/A`` and anything else → ()."""
    if not detail.startswith("IDX:"):
        return ()
    found: list[int] = []
    for part in detail.removeprefix("IDX:").split(","):
        first, _sep, last = part.partition("-")
        if not first.isdigit() or (last and not last.isdigit()):
            return ()
        found += range(int(first), int(last or first) + 1)
    return tuple(found)


def _first(value) -> str:
    if isinstance(value, list):
        return str(value[0]) if value else ""
    return str(value or "")


def _number(value) -> float:
    """Slurm 22.05 prints plain numbers; later versions ``{"set": …, "number": …}``."""
    if isinstance(value, dict):
        return (value.get("number") or 0) if value.get("set", True) else 0
    return value or 0


def _parse_local_time(value: str) -> datetime | None:
    """``squeue`` and ``sacct`` print the cluster's local time without a zone ("N/A": none)."""
    try:
        return datetime.fromisoformat(value).astimezone(UTC)
    except ValueError:
        return None


def log_unavailable(what: str, error: SlurmUnavailable) -> None:
    logger.warning("Slurm unavailable while %s: %s", what, error)
