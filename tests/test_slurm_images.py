"""On Slurm the same image runs the same way: the keeper unpacks it on the node into the node's
cache and starts the replica's sandbox with the image's root as ``/`` (jobs/execution/replica).
"""

from __future__ import annotations

import shutil

import pytest
from django.conf import settings

from jobs.execution.files import replica_output_dir, storage_name
from jobs.models import Job
from tests.agent_support import attempt_log, attempts_of, place, wait_for_state
from tests.test_slurm_run import gpu_job

pytestmark = pytest.mark.integration
WAIT = 90
LOOK = (
    "out=$TRAINYARD_DATA_OUT; cat /etc/marker > $out/marker; python3 --version > $out/python; "
    'echo "$GREETING|$(pwd)" > $out/env; touch /usr/bin/planted 2>/dev/null || echo ro > $out/ro'
)


def output_of(job: Job, node) -> dict[str, str]:
    folder = replica_output_dir(storage_name(node), job.pk, 0)
    return {path.name: path.read_text() for path in folder.iterdir() if path.is_file()}


def test_a_slurm_job_runs_in_its_image(tiny_images, slurm):
    image, node = tiny_images["a"], slurm.nodes[1]
    job = place(gpu_job(LOOK, image=image, image_digest=image.digest), [node], cards=[[0]])
    job = wait_for_state(job, Job.FINAL_STATES, slurm.worker, timeout=WAIT)
    assert job.state == Job.State.SUCCEEDED, (job.state_reason, attempt_log(attempts_of(job)[0]))
    out = output_of(job, node)
    assert (out["marker"], out["env"], out["ro"]) == ("image A\n", "from-a|/\n", "ro\n")
    assert out["python"].startswith("Python 3.11")
    assert "image tiny-a as /" in attempt_log(attempts_of(job)[0])


def test_a_slurm_job_whose_image_is_gone_fails_at_once(tiny_images, slurm):
    image, node = tiny_images["b"], slurm.nodes[1]
    shutil.rmtree(settings.TRAINYARD_IMAGE_STORE / "blobs")
    job = gpu_job("echo never", image=image, image_digest=image.digest, max_retries=2)
    job = wait_for_state(
        place(job, [node], cards=[[0]]), Job.FINAL_STATES, slurm.worker, timeout=WAIT
    )
    assert (job.state, job.state_reason_code) == (Job.State.FAILED, "image.broken")
    assert len(attempts_of(job)) == 1
