"""TRAINYARD_CHECKPOINT on a real agent: kept across attempts, each attempt's own, then removed.

A retry runs as another slot uid, yet finds what the failed attempt saved and may
overwrite it; what the job linked in from outside stays as it was; the poll removes the
checkpoint once the job has ended, node-local or under a shared checkpoint root.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from django.conf import settings

from jobs.execution.checkpoint_cleanup import checkpoints_remove_ended
from jobs.execution.files import checkpoint_marks_dir, node_checkpoint_dir, storage_name
from jobs.execution.replica.checkpoint import checkpoint_mark, checkpoint_marks
from jobs.models import Job
from tests.agent_support import attempt_log, attempts_of, cpu_job, make_node, place, wait_for_state
from tests.factories import JobFactory
from tests.support.waiting import wait_until

OTHER_USER = 4242

# Attempt 1 saves, plants a link to a host file and fails; attempt 2 reads and overwrites.
RESUMING = """echo "attempt $TRAINYARD_ATTEMPT uid $(id -u) in $TRAINYARD_CHECKPOINT"
if [ "$TRAINYARD_ATTEMPT" = 1 ]; then
  mkdir -p $TRAINYARD_CHECKPOINT/epoch && echo 41 > $TRAINYARD_CHECKPOINT/epoch/step
  chmod 600 $TRAINYARD_CHECKPOINT/epoch/step && ln -s {target} $TRAINYARD_CHECKPOINT/planted
  exit 3
fi
echo "resumed at step $(cat $TRAINYARD_CHECKPOINT/epoch/step)"
echo 42 > $TRAINYARD_CHECKPOINT/epoch/step
rm $TRAINYARD_CHECKPOINT/planted
echo saved"""


def host_files(root: Path) -> dict[str, Path]:
    """Files a job must never get: a person's and root's, on the node root's filesystem."""
    folder = root / "host"
    folder.mkdir()
    persons, roots = folder / "persons.txt", folder / "roots.conf"
    persons.write_text("p")
    os.chown(persons, OTHER_USER, OTHER_USER)
    roots.write_text("r")
    return {"persons": persons, "roots": roots}


def plant_hard_links(checkpoint: Path, files: dict[str, Path]) -> None:
    """Hard links into the checkpoint, as a job outside a sandbox could make them."""
    checkpoint.mkdir(parents=True)
    for name, path in files.items():
        os.link(path, checkpoint / f"hard-{name}")


def uids(job: Job) -> list[str]:
    return [attempt_log(a).split(" uid ")[1].split()[0] for a in attempts_of(job)]


@pytest.mark.integration
def test_a_retry_resumes_from_the_checkpoint_as_its_own_uid(site):
    files = host_files(settings.TRAINYARD_NODE_ROOT.parent)
    job = cpu_job(RESUMING.format(target=files["persons"]), max_retries=1)
    checkpoint = node_checkpoint_dir(storage_name(site.node), job.pk, 0)
    plant_hard_links(checkpoint, files)

    job = site.wait(place(job, [site.node]), Job.FINAL_STATES)
    assert job.state == Job.State.SUCCEEDED, job.state_reason
    first, second = attempts_of(job)
    assert "/trainyard/checkpoint" in attempt_log(first)
    assert "resumed at step 41" in attempt_log(second) and "saved" in attempt_log(second)
    assert len(set(uids(job))) == 2  # each attempt its own slot uid
    # Nothing from outside changed hands, through a link or a hard link.
    assert os.stat(files["persons"]).st_uid == OTHER_USER
    assert os.stat(files["roots"]).st_uid == 0
    if site.executor != "local":
        return  # removed by the tracking pass's task: tests/test_slurm_preemption.py
    wait_until(lambda: not checkpoint.exists(), what="the ended job's checkpoint removed")
    # The cleanup removes the folder, then its mark (a failed removal keeps the mark, to
    # try again): the mark may outlive the folder by a moment, as on Slurm.
    marks = checkpoint_marks_dir(site.node.name)
    wait_until(lambda: checkpoint_marks(marks) == [], what="its mark removed")
    assert files["persons"].read_text() == "p" and files["roots"].read_text() == "r"


@pytest.mark.integration
def test_a_shared_checkpoint_root_holds_the_checkpoint_and_loses_it_with_the_job(
    agent_env, settings
):
    settings.TRAINYARD_CHECKPOINT_ROOT = settings.TRAINYARD_NODE_ROOT.parent / "shared"
    node = make_node()
    agent = agent_env(
        [node], env={"TRAINYARD_CHECKPOINT_ROOT": str(settings.TRAINYARD_CHECKPOINT_ROOT)}
    )
    job = cpu_job(RESUMING.format(target="/etc/hostname"), max_retries=1)
    job = wait_for_state(place(job, [node]), Job.FINAL_STATES, agent)
    assert job.state == Job.State.SUCCEEDED, job.state_reason
    first, second = attempts_of(job)
    assert "in /trainyard/checkpoint" in attempt_log(first)  # never the host's path
    assert "resumed at step 41" in attempt_log(second)
    assert not node_checkpoint_dir(node.name, job.pk, 0).exists()
    wait_until(
        lambda: not (settings.TRAINYARD_CHECKPOINT_ROOT / str(job.pk)).exists(),
        what="the shared checkpoint removed",
    )
    assert settings.TRAINYARD_CHECKPOINT_ROOT.is_dir()


def test_the_poll_removes_only_ended_jobs_checkpoints(db, settings, tmp_path):
    settings.TRAINYARD_NODE_ROOT = tmp_path / "nodes"
    settings.TRAINYARD_CHECKPOINT_ROOT = tmp_path / "shared"
    ended = JobFactory(state=Job.State.SUCCEEDED)
    running = JobFactory(state=Job.State.RUNNING)
    requeued = JobFactory(state=Job.State.RESOURCE_WAIT)  # preempted: it comes back
    busy = JobFactory(state=Job.State.STOPPED)  # its runner here has not ended yet
    gone = 999_999
    marks = checkpoint_marks_dir("n1")
    folders = {}
    for job_id in (ended.pk, running.pk, requeued.pk, busy.pk, gone):
        checkpoint_mark(marks, job_id=job_id, replica_index=0)
        local = node_checkpoint_dir("n1", job_id, 0)
        shared = settings.TRAINYARD_CHECKPOINT_ROOT / str(job_id) / "replica-0"
        for folder in (local, shared):
            (folder / "sub").mkdir(parents=True)
            (folder / "sub" / "state.pt").write_text("s")
        folders[job_id] = (local, shared)

    checkpoints_remove_ended("n1", busy_job_ids={busy.pk})

    for job_id in (ended.pk, gone):
        assert not any(folder.exists() for folder in folders[job_id])
        assert not (settings.TRAINYARD_CHECKPOINT_ROOT / str(job_id)).exists()
    for job_id in (running.pk, requeued.pk, busy.pk):
        assert all((folder / "sub" / "state.pt").exists() for folder in folders[job_id])
    assert checkpoint_marks(marks) == sorted((j, 0) for j in (running.pk, requeued.pk, busy.pk))


def test_the_poll_keeps_the_checkpoints_of_ended_jobs_that_asked(db, settings, tmp_path):
    """Kept: the folders stay, node-local and shared, and only the mark goes (the poll reads
    it no more); not kept: removed."""
    settings.TRAINYARD_NODE_ROOT = tmp_path / "nodes"
    settings.TRAINYARD_CHECKPOINT_ROOT = tmp_path / "shared"
    kept = JobFactory(state=Job.State.FAILED, keep_checkpoint=True)
    removed = JobFactory(state=Job.State.FAILED, keep_checkpoint=False)
    marks = checkpoint_marks_dir("n1")
    folders = {}
    for job in (kept, removed):
        folders[job.pk] = []
        for index in (0, 1):
            checkpoint_mark(marks, job_id=job.pk, replica_index=index)
            local = node_checkpoint_dir("n1", job.pk, index)
            shared = settings.TRAINYARD_CHECKPOINT_ROOT / str(job.pk) / f"replica-{index}"
            for folder in (local, shared):
                folder.mkdir(parents=True)
                (folder / "state.pt").write_text("s")
                folders[job.pk].append(folder)

    checkpoints_remove_ended("n1", busy_job_ids=set())

    assert all((folder / "state.pt").read_text() == "s" for folder in folders[kept.pk])
    assert not any(folder.exists() for folder in folders[removed.pk])
    assert not (settings.TRAINYARD_CHECKPOINT_ROOT / str(removed.pk)).exists()
    assert checkpoint_marks(marks) == []


@pytest.mark.integration
def test_a_real_job_that_keeps_its_checkpoint_finds_it_after_the_poll(agent_env):
    node = make_node()
    agent = agent_env([node])
    job = cpu_job("echo 7 > $TRAINYARD_CHECKPOINT/step", keep_checkpoint=True)
    job = wait_for_state(place(job, [node]), Job.FINAL_STATES, agent)
    assert job.state == Job.State.SUCCEEDED, job.state_reason
    marks = checkpoint_marks_dir(node.name)
    wait_until(lambda: checkpoint_marks(marks) == [], what="the ended job's mark gone")
    assert (node_checkpoint_dir(node.name, job.pk, 0) / "step").read_text() == "7\n"
