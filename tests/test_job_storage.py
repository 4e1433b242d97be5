"""A job's storage is enforced on everything it writes: its output folder and its /tmp.

Finding 6 of the hostile-job review: 2.5 GiB written to /trainyard/output
with ``storage_gib: 2`` succeeded, on the disk the platform shares. On both
executors: the local runner and the Slurm replica's keeper watch the same.
"""

from __future__ import annotations

import pytest

from jobs.execution.files import replica_output_dir, storage_name
from jobs.models import Job
from tests.agent_support import attempts_of
from tests.test_hostile_jobs import assert_platform_fine

pytestmark = pytest.mark.integration

# 256 MiB at a time, then a pause long enough for the watch to look.
WRITE = "for i in $(seq {chunks}); do head -c 268435456 /dev/zero > {folder}/blob-$i; done\nsleep 5"


def test_writing_past_the_storage_limit_ends_the_job_with_that_reason(site):
    job = site.run(WRITE.format(chunks=10, folder="/trainyard/output"), storage_gib=2)
    assert job.state == Job.State.FAILED
    (attempt,) = attempts_of(job)
    assert attempt.reason.startswith("Storage limit exceeded:"), attempt.reason
    assert "of 2 GiB" in attempt.reason
    assert not attempt.platform_fault
    output = replica_output_dir(storage_name(site.node), job.pk, 0)
    written = sum(path.stat().st_size for path in output.iterdir())
    assert written <= 2 * 1024**3 + 2 * 268435456  # the bound: what it writes in a watch period
    assert_platform_fine(site)


def test_output_and_tmp_count_together(site):
    command = (
        WRITE.format(chunks=5, folder="/tmp")
        + "\n"
        + WRITE.format(chunks=4, folder="/trainyard/output")
    )
    job = site.run(command, storage_gib=2, memory_mib=4096)
    assert job.state == Job.State.FAILED
    assert attempts_of(job)[0].reason.startswith("Storage limit exceeded:")


def test_a_job_within_its_storage_succeeds(site):
    job = site.run(WRITE.format(chunks=2, folder="/trainyard/output"), storage_gib=2)
    assert job.state == Job.State.SUCCEEDED, job.state_reason


def test_the_checkpoint_counts_as_storage(site):
    job = site.run(WRITE.format(chunks=10, folder="/trainyard/checkpoint"), storage_gib=2)
    assert job.state == Job.State.FAILED
    assert attempts_of(job)[0].reason.startswith("Storage limit exceeded:")
    assert_platform_fine(site)
