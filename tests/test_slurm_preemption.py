"""Preemption and checkpoints on Slurm, end to end: the pass preempts a borrowing job for
a job within its quota (Trainyard's decision), the borrower's keeper passes the TERM on so
that it saves its checkpoint, it goes back to its queue, and its attempt 2 resumes from
the checkpoint on the node that keeps it; a job's checkpoint goes once it has ended."""

from __future__ import annotations

import pytest

from jobs.execution.files import checkpoint_marks_dir, replica_checkpoint_dir, storage_name
from jobs.execution.replica.checkpoint import checkpoint_marks
from jobs.models import Job, ReplicaAttempt
from resources.models import Node, SiteSettings
from resources.services import node_set_state
from tests.agent_support import attempt_log, attempts_of, wait_for_state
from tests.factories import JobFactory, QuotaFactory, UserFactory
from tests.support.waiting import wait_until
from tests.test_slurm_run import WAIT

pytestmark = pytest.mark.integration

# Counts to 300 in tenths of a second, from the step its checkpoint holds; saves on TERM.
RESUMES = """step=$(cat "$TRAINYARD_CHECKPOINT/step" 2>/dev/null || echo 0)
echo "attempt $TRAINYARD_ATTEMPT resumes at step $step"
trap 'echo "$step" > "$TRAINYARD_CHECKPOINT/step"; echo "saved at step $step"; exit 0' TERM
while [ "$step" -lt 300 ]; do step=$((step + 1)); sleep 0.1; done
echo "finished at step $step"
"""


def test_a_borrowing_job_on_slurm_is_preempted_saves_and_resumes(slurm, slurm_cluster_alone):
    SiteSettings.objects.update_or_create(pk=1, defaults={"preempt_grace_seconds": 20})
    node = slurm.nodes[3]
    for other in slurm.nodes[:3]:  # drained here only: one node of 4 cards to share
        node_set_state(node=other, state=Node.State.DRAINING, reason="Not for this test")
    ada = UserFactory(username="ada")
    QuotaFactory(user=ada, gpu_model=node.gpu_model, limit=0)  # all she runs borrows
    fields = {"gpu_model": node.gpu_model, "cpu_milli": 2000, "memory_mib": 2048}
    borrower = JobFactory(owner=ada, command=RESUMES, gpu_count=4, preemptible=True, **fields)
    borrower = wait_for_state(borrower, Job.State.RUNNING, slurm.worker, timeout=WAIT)
    assert borrower.borrowed
    first = attempts_of(borrower)[0]
    wait_until(lambda: "resumes at step 0" in attempt_log(first), what="attempt 1 counts")

    bob = UserFactory(username="bob")  # no quota: every job of his is within it
    newcomer = JobFactory(owner=bob, command="echo newcomer ran", gpu_count=1, **fields)

    newcomer = wait_for_state(newcomer, Job.State.SUCCEEDED, slurm.worker, timeout=WAIT)
    first = attempts_of(borrower)[0]
    assert first.state == ReplicaAttempt.State.STOPPED
    saved = [line for line in attempt_log(first).splitlines() if line.startswith("saved at")]
    assert saved, attempt_log(first)
    step = int(saved[0].split()[-1])
    assert step > 0
    events = list(Job.objects.get(pk=borrower.pk).events.values_list("reason", flat=True))
    assert f"Preempted for job #{newcomer.pk}; back in the queue (not counted as a retry)" in events

    borrower = wait_for_state(borrower, Job.FINAL_STATES, slurm.worker, timeout=2 * WAIT)
    assert borrower.state == Job.State.SUCCEEDED, borrower.state_reason
    assert borrower.attempt == 2
    second = attempts_of(borrower)[-1]
    assert f"attempt 2 resumes at step {step}" in attempt_log(second)
    assert "finished at step 300" in attempt_log(second)


def test_a_slurm_jobs_checkpoint_is_removed_once_it_has_ended(slurm):
    """No agent polls a Slurm node: the tracking pass removes ended jobs' checkpoints
    (from the marks the platform wrote when it prepared each replica)."""
    node = slurm.nodes[2]
    job = JobFactory(
        owner=UserFactory(username="slurm-user"),
        command='echo 7 > "$TRAINYARD_CHECKPOINT/step"',
        gpu_model=node.gpu_model,
        gpu_count=1,
        cpu_milli=2000,
        memory_mib=2048,
    )
    job = wait_for_state(job, Job.FINAL_STATES, slurm.worker, timeout=WAIT)
    assert job.state == Job.State.SUCCEEDED, job.state_reason
    ran_on = storage_name(attempts_of(job)[0].node)
    folder = replica_checkpoint_dir(ran_on, job.pk, 0)
    wait_until(lambda: not folder.exists(), what="the ended job's checkpoint removed", timeout=WAIT)
    # The cleanup removes the folder, then its mark (a failed removal keeps the mark, to
    # try again): the mark may outlive the folder by a moment.
    marks = checkpoint_marks_dir(ran_on)
    wait_until(lambda: not any(checkpoint_marks(marks)), what="its mark removed", timeout=WAIT)
