"""What each running attempt of a node uses, sampled by its agent every
``TRAINYARD_USAGE_SAMPLE_SECONDS``: its processes' CPU time and I/O and its memory, as the
kernel counts them, and its cards through NVML (docs/usage-metrics.md).

Nothing a job writes is read: the processes are the members of the attempt's own cgroup
(``AttemptFolder.processes``), their counts come from ``/proc``, the memory from the
cgroup, and the cards are the ones Trainyard allocated, by index.
"""

from __future__ import annotations

import contextlib
import os
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from django.conf import settings
from django.utils import timezone

from jobs.execution.files import node_root
from jobs.execution.replica.folder import AttemptFolder
from jobs.models import AttemptSample, ReplicaAttempt, mean_util

MIB = 1024 * 1024
TICKS = os.sysconf("SC_CLK_TCK")
PAGE = os.sysconf("SC_PAGE_SIZE")


@dataclass(frozen=True)
class Usage:
    cpu_seconds: float
    memory_mib: int
    read_bytes: int
    write_bytes: int
    gpus: list[dict] = field(default_factory=list)


def usage_due(node_name: str, now: float | None = None) -> bool:
    """Whether the node's attempts are due a sample (its mark older than the interval)."""
    mark = node_root(node_name) / "usage-sampled"
    now = time.time() if now is None else now
    with contextlib.suppress(OSError):
        if now - mark.stat().st_mtime < settings.TRAINYARD_USAGE_SAMPLE_SECONDS:
            return False
    with contextlib.suppress(OSError):
        mark.touch()
    return True


def usage_record(watched: list[tuple[AttemptFolder, ReplicaAttempt]]) -> int:
    """A sample of every running attempt in ``watched``, in one insert; how many."""
    at = timezone.now()
    samples = []
    for folder, attempt in watched:
        if attempt.state != ReplicaAttempt.State.RUNNING:
            continue
        usage = attempt_usage(folder, attempt.replica.card_indices or [])
        if usage is not None:
            samples.append(
                AttemptSample(
                    attempt=attempt, at=at, gpu_util=mean_util(usage.gpus), **asdict(usage)
                )
            )
    AttemptSample.objects.bulk_create(samples)
    return len(samples)


def attempt_usage(folder: AttemptFolder, cards: list[int]) -> Usage | None:
    """The attempt's use now; None once it has no runner (nothing to count)."""
    spec, current = folder.read("spec") or {}, folder.read("current")
    if current is None:
        return None
    cpu = read = write = resident = 0
    for pid in folder.processes(spec, current):
        counts = _process_counts(pid)
        if counts is not None:
            cpu += counts[0]
            read += counts[1]
            write += counts[2]
            resident += counts[3]
    memory = _cgroup_memory(folder.own_cgroup(spec))
    return Usage(
        cpu_seconds=round(cpu / TICKS, 2),
        memory_mib=(memory if memory is not None else resident) // MIB,
        read_bytes=read,
        write_bytes=write,
        gpus=card_usage(cards),
    )


def _process_counts(pid: int) -> tuple[int, int, int, int] | None:
    """(CPU ticks with its reaped children's, bytes read, bytes written, resident bytes)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        io = Path(f"/proc/{pid}/io").read_text()
    except OSError:  # it ended between the two looks
        return None
    fields = stat[stat.rindex(")") + 2 :].split()
    # After the name: state(3) … utime(14) stime(15) cutime(16) cstime(17) … rss(24).
    ticks = sum(int(value) for value in fields[11:15])
    counters = dict(line.split(": ", 1) for line in io.splitlines() if ": " in line)
    return (
        ticks,
        int(counters.get("read_bytes", 0)),
        int(counters.get("write_bytes", 0)),
        int(fields[21]) * PAGE,
    )


def _cgroup_memory(cgroup: Path | None) -> int | None:
    """Bytes the attempt's cgroup holds (v2 ``memory.current``, v1 ``usage_in_bytes``)."""
    if cgroup is None:
        return None
    for name in ("memory.current", "memory.usage_in_bytes"):
        with contextlib.suppress(OSError, ValueError):
            return int((cgroup / name).read_text())
    return None


_nvml_state: dict = {}


def nvml():
    """pynvml, initialised once per process; None where there is no NVIDIA driver."""
    if "module" not in _nvml_state:
        _nvml_state["module"] = None
        with contextlib.suppress(ImportError):
            import pynvml

            try:
                pynvml.nvmlInit()
                _nvml_state["module"] = pynvml
            except pynvml.NVMLError:
                pass
    return _nvml_state["module"]


def card_usage(indices: list[int]) -> list[dict]:
    """Per allocated card: utilisation %, memory used, power and temperature (NVML)."""
    library = nvml() if indices else None
    if library is None:
        return []
    cards = []
    for index in indices:
        try:
            handle = library.nvmlDeviceGetHandleByIndex(index)
            rates = library.nvmlDeviceGetUtilizationRates(handle)
            memory = library.nvmlDeviceGetMemoryInfo(handle)
            power_mw = library.nvmlDeviceGetPowerUsage(handle)
            temp = library.nvmlDeviceGetTemperature(handle, library.NVML_TEMPERATURE_GPU)
        except library.NVMLError:
            continue  # a card that does not answer now: none this time
        cards.append(
            {
                "index": index,
                "util": int(rates.gpu),
                "memory_mib": int(memory.used) // MIB,
                "power_w": round(power_mw / 1000, 1),
                "temp_c": int(temp),
            }
        )
    return cards
