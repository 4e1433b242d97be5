"""One hostile-job suite for both executors: ``site`` runs a job on the local agent or on Slurm.

A test that takes ``site`` runs twice: once on a fresh local node served by
its own agent, once on a node of the development Slurm cluster
(``slurm_support.py``) with a tracking worker. Both run the same replica
runtime (``jobs/execution/replica/``), so every attack must fail the same way.
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from jobs.models import Job
from resources.models import Node
from tests.agent_support import Agent, attempt_log, attempts_of, cpu_job, place, wait_for_state
from tests.support.waiting import wait_until

EXECUTORS = ("local", "slurm")
# A Slurm job waits for sbatch, the controller and the tracking pass.
WAIT_SECONDS = 120


@dataclass
class Site:
    executor: str
    worker: Agent  # the local agent, or the worker that submits to and tracks Slurm
    node: Node

    def start(self, command: str, **fields) -> Job:
        return place(cpu_job(command, **fields), [self.node])

    def run(self, command: str, **fields) -> Job:
        return self.wait(self.start(command, **fields), Job.FINAL_STATES)

    def running(self, command: str) -> Job:
        """A neighbour on the same node, running (its log says ``up``) while the attack happens."""
        job = self.wait(self.start(command), Job.State.RUNNING)
        wait_until(
            lambda: "up" in attempt_log(attempts_of(job)[0]),
            what="the neighbour's output",
            timeout=WAIT_SECONDS,
        )
        return job

    def wait(self, job: Job, states) -> Job:
        return wait_for_state(job, states, self.worker, timeout=WAIT_SECONDS)


@pytest.fixture(params=EXECUTORS)
def site(request, transactional_db) -> Site:
    # The database first: the executors' fixtures below are looked up by name.
    if request.param == "local":
        agent = request.getfixturevalue("agent")
        return Site(executor="local", worker=agent, node=agent.nodes[0])
    slurm = request.getfixturevalue("slurm")
    return Site(executor="slurm", worker=slurm.worker, node=slurm.nodes[0])
