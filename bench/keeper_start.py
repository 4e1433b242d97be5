"""What a Slurm replica's keeper costs on its node: CPU and time around a job's command.

    sudo .venv/bin/python bench/keeper_start.py [--replicas 40] [--baseline CHECKOUT]

Needs root and the host's job network (``manage.py job_network install``). Runs
the keeper as a Slurm batch step does (``keeper_argv``: ``python -I -S
keeper.py <attempt folder> <node>``), without Slurm, for a one-phase replica
whose command is ``true``: slot, namespace, nftables, bwrap, the replica
script, and all of it taken down again. For each checkout (``--baseline``, an
older one, e.g. a ``git worktree``, and this one), interleaved run by run, it
prints per replica the median wall time and the CPU of the keeper and every
process under it (user and system). On a turnover of a busy cluster every
card's keeper starts at once: this CPU is what they share.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from types import SimpleNamespace

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "trainyard.settings")


BATCH_SCRIPT = "batch.sh"


def attempt_folder(base: Path, *, attempt_id: int = 1, command: str = "true") -> Path:
    """An attempt folder as the Slurm executor writes it for one replica of ``command``
    (its output is ``base / "output"``, ``/trainyard/output`` in the sandbox), with the
    batch script the executor hands ``sbatch`` for it as ``BATCH_SCRIPT``."""
    import django
    from django.apps import apps

    if not apps.ready:
        django.setup()
    from django.conf import settings

    from jobs.execution.files import LOG_NAME
    from jobs.execution.replica import keeper, sandbox
    from jobs.execution.replica.prepare import write_command_file
    from jobs.execution.slurm.scripts import (
        REPLICA_SCRIPT,
        ReplicaPlan,
        Request,
        batch_script,
        replica_script,
    )

    folder = base / "attempt"
    folder.mkdir(parents=True)
    os.chmod(folder, 0o711)
    for name in ("output", "checkpoint"):
        (base / name).mkdir()
    command_file = write_command_file(SimpleNamespace(path=folder), "training", command, None)
    replica = ReplicaPlan(
        index=0,
        attempt_number=1,
        attempt_folder=folder,
        node_name="",
        env={"TRAINYARD_JOB_ID": str(attempt_id), "PATH": sandbox.job_path_variable()},
        phases=["training"],
    )
    request = Request(
        cpu_milli=1000, memory_mib=1024, gres="", runtime_minutes=None, warning_seconds=30
    )
    script = folder / REPLICA_SCRIPT
    script.write_text(
        replica_script(replica, shared=replica.env, request=request, deadline_seconds=None)
    )
    script.chmod(0o500)
    batch = batch_script([replica], request=request, python=sys.executable)
    (folder / BATCH_SCRIPT).write_text(batch)
    mounts = sandbox.Mounts(
        code=None,
        output=base / "output",
        checkpoint=base / "checkpoint",
        read_only_extra=sandbox.python_environment_paths(),
    )
    plan = keeper.keeper_plan(
        attempt_id=attempt_id,
        node_settings={name: getattr(settings, name) for name in keeper.NODE_SETTINGS},
        mounts=mounts,
        phases=[("training", command_file)],
        log=folder / LOG_NAME,
        script=REPLICA_SCRIPT,
        storage_bytes=2**30,
        max_processes=256,
        scratch=sandbox.scratch_paths(in_image=False),
    )
    (folder / f"{keeper.PLAN}.json").write_text(json.dumps(plan))
    return folder


def run_keeper(checkout: Path, folder: Path) -> tuple[float, float, float]:
    """One replica: (wall, user CPU, system CPU) in seconds, its whole process tree."""
    argv = [
        sys.executable,
        "-I",
        "-S",
        str(checkout / "jobs/execution/replica/keeper.py"),
        str(folder),
        "gpu01",
    ]
    env = {
        "PATH": os.environ["PATH"],
        "TRAINYARD_JOB_ID": "1",
        "SLURMD_NODENAME": "gpu01",
        "SLURM_JOB_ID": "1",
    }
    for stale in ("exit.json", "address.json", "refused.json"):
        (folder / stale).unlink(missing_ok=True)
    before, start = resource.getrusage(resource.RUSAGE_CHILDREN), time.perf_counter()
    subprocess.run(argv, env=env, check=True, cwd="/")
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if '"exit_code": 0' not in (folder / "exit.json").read_text():
        sys.exit(f"the replica did not end well: {(folder / 'output.log').read_text()[-500:]}")
    return wall, after.ru_utime - before.ru_utime, after.ru_stime - before.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--replicas", type=int, default=40)
    parser.add_argument("--baseline", type=Path, help="an older checkout to run side by side")
    args = parser.parse_args()
    if os.geteuid():
        sys.exit("run as root: the keeper makes the replica's namespace and slot")
    checkouts = {"baseline": args.baseline.resolve()} if args.baseline else {}
    checkouts["this checkout"] = ROOT
    base = Path(tempfile.mkdtemp(prefix="keeper-bench-"))
    os.chmod(base, 0o755)
    try:
        folder = attempt_folder(base)
        runs: dict[str, list[tuple[float, float, float]]] = {name: [] for name in checkouts}
        for checkout in checkouts.values():
            run_keeper(checkout, folder)  # warm: its bytecode written, its page cache filled
        for _ in range(args.replicas):
            for name, checkout in checkouts.items():
                runs[name].append(run_keeper(checkout, folder))
    finally:
        shutil.rmtree(base, ignore_errors=True)
    print(f"{args.replicas} replicas of `true` each, interleaved; {os.cpu_count()} CPUs")
    print(f"{'':24s} {'wall ms':>8s} {'CPU ms':>8s} {'user':>6s} {'system':>7s}")
    medians = {}
    for name, rows in runs.items():
        columns = zip(*rows, strict=True)
        wall, user, system = (statistics.median(column) * 1000 for column in columns)
        cpu = statistics.median((u + s) * 1000 for _w, u, s in rows)
        medians[name] = (wall, cpu)
        print(f"{name:24s} {wall:8.1f} {cpu:8.1f} {user:6.1f} {system:7.1f}")
    if "baseline" in medians:
        (wall_a, cpu_a), (wall_b, cpu_b) = medians["baseline"], medians["this checkout"]
        print(f"this checkout / baseline: wall {wall_b / wall_a:.2f}, CPU {cpu_b / cpu_a:.2f}")


if __name__ == "__main__":
    main()
