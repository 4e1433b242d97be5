"""What a Celery worker ran, from its log at ``--loglevel INFO``: per task, how many
times and the seconds they took (its ``Task <name>[<id>] succeeded in <s>s`` lines).

    tally = TaskTally(log_path)   # counts from here on
    ...                            # the run
    tally.print("b0", jobs=500)
"""

from __future__ import annotations

import re
from collections import defaultdict
from pathlib import Path

SUCCEEDED = re.compile(r"Task ([\w.]+)\[[^\]]+\] succeeded in ([\d.]+)s")


class TaskTally:
    def __init__(self, log: Path) -> None:
        self.log = log
        self.offset = log.stat().st_size if log.exists() else 0

    def counts(self) -> dict[str, tuple[int, float]]:
        """Task name -> (runs, seconds) since this tally began, most seconds first."""
        with self.log.open(errors="replace") as lines:
            lines.seek(self.offset)
            text = lines.read()
        runs: dict[str, list[float]] = defaultdict(list)
        for name, seconds in SUCCEEDED.findall(text):
            runs[name].append(float(seconds))
        tally = {name: (len(times), sum(times)) for name, times in runs.items()}
        return dict(sorted(tally.items(), key=lambda item: -item[1][1]))

    def print(self, label: str, jobs: int) -> None:
        for name, (runs, seconds) in self.counts().items():
            print(
                f"  ({label}) {name}: {runs} runs ({runs / jobs:.2f} a job), "
                f"{seconds:.1f} s, {seconds / runs * 1000:.0f} ms each"
            )
