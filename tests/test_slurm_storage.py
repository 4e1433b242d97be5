"""A Slurm job's folders name no node: its attempt folder, outputs and checkpoint lie in the
cluster's one folder on the shared filesystem (``files.SLURM_STORAGE``), so they can be made
before Slurm picks a node, and the keeper learns its node from Slurm, not from its plan."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from django.conf import settings

from jobs.execution.files import SLURM_STORAGE, replica_output_dir
from jobs.execution.replica.folder import AttemptFolder
from jobs.models import Job
from tests.agent_support import attempts_of, place, wait_for_state
from tests.test_slurm_run import WAIT, gpu_job

pytestmark = pytest.mark.integration


def test_a_slurm_jobs_folders_lie_in_the_clusters_one_folder(slurm, client):
    node = slurm.nodes[1]
    job = place(gpu_job('hostname > "$TRAINYARD_DATA_OUT/host"'), [node])
    job = wait_for_state(job, Job.FINAL_STATES, slurm.worker, timeout=WAIT)
    assert job.state == Job.State.SUCCEEDED, job.state_reason

    [attempt] = attempts_of(job)
    shared = Path(settings.TRAINYARD_NODE_ROOT) / SLURM_STORAGE
    folder = AttemptFolder.of(attempt)
    assert folder.path == shared / "attempts" / str(attempt.pk)
    plan = folder.read("keeper")
    assert "node" not in plan
    assert str(Path(settings.TRAINYARD_NODE_ROOT) / node.name) not in json.dumps(plan)
    assert not (Path(settings.TRAINYARD_NODE_ROOT) / node.name / "attempts").exists()
    # The sandbox is named for the node Slurm ran it on, which the keeper had from Slurm.
    output = replica_output_dir(SLURM_STORAGE, job.pk, 0)
    assert output == shared / "jobs" / str(job.pk) / "replica-0" / "output"
    assert (output / "host").read_text() == f"{node.name}\n"

    # The job page lists the output where it lies, under the node it ran on.
    client.force_login(job.owner)
    page = client.get(f"/jobs/{job.pk}/runtime/").content.decode()
    assert f"/jobs/{job.pk}/outputs/0/{SLURM_STORAGE}/host" in page
    download = client.get(f"/jobs/{job.pk}/outputs/0/{SLURM_STORAGE}/host")
    assert download.status_code == 200
    assert b"".join(download.streaming_content) == f"{node.name}\n".encode()
    assert client.get(f"/jobs/{job.pk}/outputs/0/{node.name}/host").status_code == 404
