"""The Slurm controller (slurmctld) stopped under running and starting jobs, then started.

CI runs the drill with a 10-second outage, to keep the suite within its time
(``tests/test_slurm_lifecycle.py`` has another of 20 s); the drill of a full minute
is the same test with a longer outage, run by hand (it takes about 90 s):

    TRAINYARD_FAULTS_SLURM_OUTAGE_SECONDS=60 pytest tests/faults/test_slurm_outage.py -rP
"""

from __future__ import annotations

import os
import time

import pytest

from jobs.models import Job
from resources.models import Node
from tests.faults.recovery import (
    RUN_MARK,
    UNTIL_LET_END,
    assert_recovered,
    let_end,
    states_are,
)
from tests.support.waiting import wait_until, within
from tests.test_slurm_run import gpu_job

pytestmark = [pytest.mark.integration, pytest.mark.faults]
OUTAGE_SECONDS = float(os.environ.get("TRAINYARD_FAULTS_SLURM_OUTAGE_SECONDS", "10"))
RUNNING_OR_DONE = (Job.State.RUNNING, *Job.FINAL_STATES)


def waiting_gpu_job(command: str) -> Job:
    """A one-card job the scheduler places on a Slurm node (beat runs a pass every 5 s)."""
    return gpu_job(RUN_MARK + command)


def test_jobs_outlive_a_controller_outage_each_run_once_and_billed_once(slurm_cluster_alone, slurm):
    """Bounds. While the controller is down: a replica that exits is reported from its exit
    file within 15 s (no controller needed); a job placed meanwhile waits in ``starting``;
    running jobs stay running and the nodes ready. From the controller answering again: the
    job placed meanwhile runs within 30 s, and a replica that exits then is reported within
    15 s. One Slurm job per job attempt throughout.
    """
    ends_during, ends_after = waiting_gpu_job(UNTIL_LET_END), waiting_gpu_job(UNTIL_LET_END)
    running = [ends_during, ends_after]
    wait_until(states_are(running, [Job.State.RUNNING]), what="both to run", timeout=90)
    slurm.cluster.run("stop-controller")
    down_at = time.monotonic()
    try:
        placed_during = waiting_gpu_job("")
        let_end(ends_during)
        within(15, states_are([ends_during], Job.FINAL_STATES), what="the exit while down")
        wait_until(states_are([placed_during], [Job.State.STARTING]), what="the placement")
        time.sleep(max(0.0, OUTAGE_SECONDS - (time.monotonic() - down_at)))
        assert states_are([ends_after], [Job.State.RUNNING])()
        assert states_are([placed_during], [Job.State.STARTING])()
        states = set(Node.objects.filter(from_slurm=True).values_list("state", flat=True))
        assert states == {Node.State.READY}, states
    finally:
        slurm.cluster.run("start")
    print(f"controller down for {time.monotonic() - down_at:.0f} s")
    within(
        30, states_are([placed_during], RUNNING_OR_DONE), what="the start", logs=slurm.worker.logs
    )
    let_end(ends_after)
    within(15, states_are([ends_after], Job.FINAL_STATES), what="the exit", logs=slurm.worker.logs)
    jobs = [ends_during, ends_after, placed_during]
    wait_until(states_are(jobs, Job.FINAL_STATES), what="every job to end", timeout=90)
    assert_recovered(jobs)
    names = [slurm_job.name for slurm_job in slurm.jobs().values()]
    assert len(names) == len(set(names)) == 3, names
