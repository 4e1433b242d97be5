"""(e) of the Slurm side by side: plain ``sbatch`` of jobs isolated as Trainyard isolates them.

Way (a) runs each job's command straight under ``slurmd``. A job through Trainyard
runs, on its node, inside its replica's keeper (``jobs/execution/replica/keeper.py``:
a host-wide slot, the replica's network namespace and nftables table, bubblewrap as the
slot's uid, all taken down again at the end). (e) submits the same 500 jobs as (a), all
at once, but each as Trainyard's own batch script for a keeper of one replica
(``scripts.batch_script``), with its attempt folder written as the Slurm executor writes
one (``bench/keeper_start.attempt_folder``). No platform runs: no database, no workers,
no tracking. So (e) is what plain Slurm does with sandboxed jobs, and (b)/(e) is what
Trainyard's control plane (admission, the look-ahead, submission, tracking, reports) adds
to it; (e)/(a) is what the sandbox costs a job on this machine, whose two cores also
run the 16 cards' keepers.

Needs what (b) needs: root, bubblewrap and the job network (``manage.py job_network
install``).
"""

from __future__ import annotations

import itertools
import os
from pathlib import Path

from bench.keeper_start import BATCH_SCRIPT, attempt_folder
from bench.slurm_sbatch import Batch

# Attempt ids far above any database's (the tests number theirs from multiples of 10,000,000),
# so that no replica network namespace is named as another's.
_ATTEMPT_IDS = itertools.count(900_000_000)


class SandboxedBatch(Batch):
    """A way's jobs, each one Trainyard's batch script around a keeper."""

    def __init__(self, args, folder: Path, conf: Path):
        super().__init__(args, folder, conf)
        # The keeper's tools (ip, nft, bwrap) are found as the executor's are: on the PATH
        # that ``sbatch --export=ALL`` hands the batch step.
        self.env["PATH"] = os.environ["PATH"]

    def sbatch(self, index: int, *, node: str | None = None) -> None:
        from jobs.execution.files import LOG_NAME

        base = self.folder / f"job{index}"
        base.mkdir()
        os.chmod(base, 0o755)
        command = f"date +%s.%N > /trainyard/output/start\nsleep {self.args.sleep:g}"
        folder = attempt_folder(base, attempt_id=next(_ATTEMPT_IDS), command=command)
        nodelist = [f"--nodelist={node}"] if node else []
        script = str(folder / BATCH_SCRIPT)
        self.submit([*nodelist, "--chdir=/", script], output=str(folder / LOG_NAME))

    def start_file(self, index: int) -> Path:
        return self.folder / f"job{index}" / "output" / "start"
