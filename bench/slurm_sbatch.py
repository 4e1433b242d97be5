"""The two ways of the Slurm side-by-side that use ``sbatch`` with no platform.

(a) submits every job at once and lets Slurm queue them: each job that ends
    starts the next one at once, because Slurm schedules when a job's epilog
    completes.
(d) submits each job only when a card frees, as any scheduler in front of
    Slurm that owns placement must (Trainyard places a job on a card, then
    submits it). The "scheduler" here is a loop that does nothing else: each
    job writes an end file when its command ends (as Trainyard's replica
    script writes ``exit.json``); the loop sees it within 10 ms, waits
    ``reaction`` seconds (0: a scheduler that costs nothing) and submits the
    next job, pinned to the same node. So (d) with no reaction is the floor
    of (b) for that design. It wins only when its ``sbatch`` reaches
    ``slurmctld`` before the ended job's epilog completes (Slurm then starts
    the new job at once); when it loses, the job waits for the next
    background pass, about a second. ``--reaction`` shows how fast a
    scheduler must submit for the first case.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from bench.slurm_occupancy import median_occupancy, node_logs
from bench.start_overhead import wait_for

NODES = ("gpu01", "gpu02", "gpu03", "gpu04")
CARDS_PER_NODE = 4
# What Trainyard asks of Slurm for one V100 on these nodes.
ONE_CARD = ["--partition=trainyard", "--gres=gpu:v100:1", "--cpus-per-task=12", "--mem=57344M"]


@dataclass
class Result:
    wall_s: float
    starts_per_s: float
    median_delay_s: float
    started: int
    card_s: float = float("nan")  # median time a job held its card (``slurm_occupancy``)


def summarize(began: float, ended: float, submitted: dict, starts: dict) -> Result:
    delays = [starts[key] - submitted[key] for key in starts]
    last_start = max(starts.values()) if starts else ended
    return Result(
        wall_s=ended - began,
        starts_per_s=len(starts) / (last_start - began),
        median_delay_s=statistics.median(delays) if delays else float("nan"),
        started=len(starts),
    )


def in_parallel(count: int, clients: int, submit) -> None:
    """``submit(i)`` for i < count, from ``clients`` threads at once; the first error is raised."""
    indices = iter(range(count))
    lock = threading.Lock()
    errors: list[BaseException] = []

    def client() -> None:
        while True:
            with lock:
                index = next(indices, None)
            if index is None or errors:
                return
            try:
                submit(index)
            except BaseException as error:  # reported after the threads end
                errors.append(error)

    threads = [threading.Thread(target=client) for _ in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if errors:
        raise errors[0]


def run_all_at_once(args, folder: Path, *, conf: Path, batch_class=None, label="a") -> Result:
    """(a): every job handed to Slurm at once, ``--clients`` submitting together (and (e),
    with ``slurm_sandboxed``'s batch)."""
    batch = (batch_class or Batch)(args, folder, conf)
    submitted: dict[int, float] = {}

    def submit(index: int) -> None:
        submitted[index] = time.time()
        batch.sbatch(index)

    began = time.time()
    in_parallel(args.jobs, args.clients, submit)
    print(f"({label}) {args.jobs} submitted with sbatch in {time.time() - began:.1f} s")
    return batch.finish(began, submitted)


def run_when_free(args, folder: Path, *, conf: Path, reaction: float) -> Result:
    """(d): 16 jobs in flight; the next one is submitted when one of theirs ends."""
    batch = Batch(args, folder, conf)
    waiting = list(range(args.jobs))
    running: dict[int, str] = {}  # job index → its node

    def submit(node: str) -> None:
        index = waiting.pop(0)
        batch.sbatch(index, node=node)
        running[index] = node

    began = time.time()
    for node in NODES:
        for _ in range(CARDS_PER_NODE):
            submit(node)
    due: list[tuple[float, str]] = []  # (when to submit, the node whose card freed)
    while waiting:
        now = time.time()
        for index in [i for i in running if batch.ended(i)]:
            due.append((now + reaction, running.pop(index)))
        due.sort()
        while due and due[0][0] <= time.time() and waiting:
            submit(due.pop(0)[1])
        time.sleep(0.01)
    took = time.time() - began
    print(f"(d) the last of {args.jobs} submitted when a card freed, at {took:.1f} s")
    # The user handed over every job at the start; the loop only held them back.
    return batch.finish(began, dict.fromkeys(range(args.jobs), began))


class Batch:
    """One way's jobs: their files, their Slurm name, and the wait for the last."""

    def __init__(self, args, folder: Path, conf: Path):
        folder.mkdir(parents=True)
        self.args = args
        self.folder = folder
        self.name = f"bench-{folder.parent.name}"  # the prefix the side-by-side cancels
        self.env = {"PATH": os.defpath, "SLURM_CONF": str(conf)}
        self.logs = node_logs(conf)
        self.slurm_ids: set[str] = set()

    def sbatch(self, index: int, *, node: str | None = None) -> None:
        end = self.folder / f"end.{index}"
        command = (
            f"date +%s.%N > {self.folder}/start.{index}; sleep {self.args.sleep:g}; "
            f"echo > {end}.partial && mv {end}.partial {end}"
        )
        self.submit([*([f"--nodelist={node}"] if node else []), f"--wrap={command}"])

    def submit(self, extra: list[str], output: str = "/dev/null") -> None:
        """``sbatch`` one of this way's jobs; its Slurm id is kept for its occupancy."""
        argv = ["sbatch", "--parsable", f"--job-name={self.name}", *ONE_CARD]
        argv += [f"--output={output}", *extra]
        answer = subprocess.run(argv, env=self.env, check=True, capture_output=True, text=True)
        self.slurm_ids.add(answer.stdout.strip().split(";")[0])

    def ended(self, index: int) -> bool:
        return (self.folder / f"end.{index}").exists()

    def finish(self, began: float, submitted: dict[int, float]) -> Result:
        wait_for(self._none_left, 3600, f"the sbatch jobs in {self.folder.name}")
        ended = time.time()
        starts = {i: float(self.start_file(i).read_text()) for i in submitted}
        result = summarize(began, ended, submitted, starts)
        result.card_s = median_occupancy(self.logs, self.slurm_ids)
        return result

    def start_file(self, index: int) -> Path:
        return self.folder / f"start.{index}"

    def _none_left(self) -> bool:
        queued = subprocess.run(
            ["squeue", "--noheader", f"--name={self.name}", "--states=PD,CF,R,CG", "--format=%i"],
            env=self.env,
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        return not queued.strip()
