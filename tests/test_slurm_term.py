"""A stopped or preempted job on Slurm gets its TERM and may save before it ends, as on
the local executor: the sandbox itself is never sent the TERM (it would kill the job
before its handler ran)."""

from __future__ import annotations

import pytest

from jobs.execution.files import replica_output_dir, storage_name
from jobs.models import Job, ReplicaAttempt
from jobs.services.stop import job_stop
from resources.models import SiteSettings
from tests.agent_support import attempt_log, attempts_of, place, wait_for_state
from tests.support.waiting import wait_until
from tests.test_slurm_run import WAIT, gpu_job

pytestmark = pytest.mark.integration

# Saving takes a moment (two seconds): a TERM that also reached the sandbox kills it first.
SAVES_ON_TERM = """trap 'sleep 2; echo saved > "$TRAINYARD_DATA_OUT/saved"; exit 0' TERM
echo started
while :; do sleep 0.2; done"""


def test_a_stopped_job_saves_on_its_term_before_it_ends(slurm):
    SiteSettings.objects.update(stop_grace_seconds=30)
    node = slurm.nodes[0]
    job = place(gpu_job(SAVES_ON_TERM), [node])
    job = wait_for_state(job, Job.State.RUNNING, slurm.worker, timeout=WAIT)
    [attempt] = attempts_of(job)
    wait_until(lambda: "started" in attempt_log(attempt), what="the job's first line", timeout=WAIT)

    job_stop(job=job, reason="Enough for today")

    job = wait_for_state(job, Job.FINAL_STATES, slurm.worker, timeout=WAIT)
    assert job.state == Job.State.STOPPED
    saved = replica_output_dir(storage_name(node), job.pk, 0) / "saved"
    assert saved.exists(), attempt_log(attempts_of(job)[0])
    assert saved.read_text() == "saved\n"
    assert attempts_of(job)[0].state == ReplicaAttempt.State.STOPPED
