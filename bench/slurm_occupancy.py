"""How long each Slurm job held its card: from ``slurmd``'s launch of its batch step to
the step's end ("done with job"), read from the development cluster's node logs.

A way's wall time is its jobs' occupancy of the 16 cards plus the moments a card stands
free between two jobs. Plain ``sbatch`` (a) holds a card for the command and Slurm's own
step; a job through Trainyard also for its replica's keeper (slot, network namespace,
sandbox: ``jobs/execution/replica/keeper.py``) before and after the command.
"""

from __future__ import annotations

import re
import statistics
from datetime import datetime
from pathlib import Path

LAUNCH = re.compile(r"\[(\S+)\] Launching batch job (\d+)")
DONE = re.compile(r"\[(\S+)\] \[(\d+)\.batch\] done with job")


def node_logs(conf: Path) -> Path:
    """The development cluster's log folder, beside its ``etc/slurm.conf``."""
    return conf.parent.parent / "log"


def occupancy_seconds(log_folder: Path, slurm_ids: set[str]) -> list[float]:
    """Launch to done, in seconds, of each of these Slurm jobs that both lines name."""
    launched: dict[str, float] = {}
    done: dict[str, float] = {}
    for log in sorted(log_folder.glob("slurmd-*.log")):
        for line in log.read_text(errors="replace").splitlines():
            for pattern, seen in ((LAUNCH, launched), (DONE, done)):
                if (match := pattern.match(line)) and match[2] in slurm_ids:
                    seen[match[2]] = datetime.fromisoformat(match[1]).timestamp()
    return [done[key] - launched[key] for key in launched.keys() & done.keys()]


def median_occupancy(log_folder: Path, slurm_ids: set[str]) -> float:
    held = occupancy_seconds(log_folder, slurm_ids)
    return statistics.median(held) if held else float("nan")
