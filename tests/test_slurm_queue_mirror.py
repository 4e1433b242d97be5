"""A job waiting inside Slurm says why in Slurm's words and when Slurm expects it to start;
a hold or a cancel by someone in Slurm shows on the job (jobs/execution/slurm/track.py)."""

from __future__ import annotations

import contextlib
import os
import subprocess
from datetime import timedelta

import pytest
from django.utils import timezone, translation

from jobs.models import Job
from tests.agent_support import attempts_of, place, wait_for_state
from tests.support.waiting import wait_until
from tests.test_slurm_run import WAIT, gpu_job

pytestmark = pytest.mark.integration


def foreign_job(slurm, node_name: str, minutes: int, nice: int = 0) -> str:
    """A plain ``sbatch`` of someone else's, holding ``node_name`` whole."""
    env = {"PATH": os.defpath, "SLURM_CONF": str(slurm.cluster.conf)}
    argv = ["sbatch", "--parsable", "--partition=trainyard", f"--nodelist={node_name}"]
    argv += ["--exclusive", f"--time={minutes}", "--job-name=someone-else", "--output=/dev/null"]
    argv += [f"--nice={nice}", "--wrap=sleep 600"]
    output = subprocess.run(argv, capture_output=True, text=True, env=env, check=True).stdout
    return output.strip().split(";")[0]


def cancel(slurm, slurm_id: str) -> None:
    env = {"PATH": os.defpath, "SLURM_CONF": str(slurm.cluster.conf)}
    subprocess.run(["scancel", slurm_id], env=env, check=False)


def test_a_job_pending_in_slurm_shows_its_reason_estimate_hold_and_cancel(
    slurm, slurm_cluster_alone
):
    node = slurm.nodes[1]
    other = foreign_job(slurm, node.name, minutes=5)
    try:
        wait_until(
            lambda: "RUNNING" in slurm.cluster.scontrol("show", "job", other),
            what="the foreign job runs",
            timeout=WAIT,
        )
        job = place(gpu_job("echo ran", max_runtime_minutes=10), [node], cards=[[0]])
        [attempt] = wait_until(
            lambda: [a for a in attempts_of(job) if a.external_id], what="submitted", timeout=WAIT
        )
        slurm_id = attempt.external_id

        def fresh() -> Job:
            return Job.objects.get(pk=job.pk)

        waiting = (
            f"Slurm job {slurm_id} is waiting in Slurm's queue: "
            "the resources it needs are in use by other Slurm jobs."
        )
        wait_until(lambda: fresh().state_reason == waiting, what=waiting, timeout=WAIT)
        # Slurm's backfill plans its start at the foreign job's time limit (5 minutes).
        expected = wait_until(
            lambda: fresh().estimated_start, what="Slurm's estimate", timeout=WAIT
        )
        assert timezone.now() < expected < timezone.now() + timedelta(minutes=6)
        assert fresh().state == Job.State.STARTING
        assert fresh().queue_position == 1  # the only job pending there

        # Someone else's job of a higher priority pends there too: it goes first.
        ahead = foreign_job(slurm, node.name, minutes=5, nice=-1000)
        wait_until(lambda: fresh().queue_position == 2, what="second in Slurm's queue")
        cancel(slurm, ahead)

        slurm.cluster.scontrol("hold", slurm_id)
        held = f"Slurm job {slurm_id} is waiting in Slurm's queue: " + (
            "held in Slurm by an administrator."
        )
        wait_until(lambda: fresh().state_reason == held, what=held, timeout=WAIT)
        with translation.override("zh-hans"):
            assert "被管理员在 Slurm 中挂起" in fresh().reason_text

        cancel(slurm, slurm_id)  # someone else cancels it in Slurm
        job = wait_for_state(job, Job.FINAL_STATES, slurm.worker, timeout=WAIT)
        [attempt] = attempts_of(job)
        assert "Cancelled in Slurm." in attempt.reason
    finally:
        with contextlib.suppress(Exception):
            cancel(slurm, other)
