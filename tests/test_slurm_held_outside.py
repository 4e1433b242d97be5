"""A plain ``sbatch`` beside Trainyard on the real cluster: what it holds counts as taken.

Each test holds the cluster alone: the job outside Trainyard takes cards that other test
sessions' jobs may be pinned to (they would wait in Slurm), and their jobs would be
outside this Trainyard's too.
"""

from __future__ import annotations

import contextlib
import os
import subprocess

import pytest
from django.urls import reverse

from jobs.execution.slurm import cli
from jobs.execution.slurm.inventory import inventory_sync
from jobs.free_panel import free_panel
from jobs.models import Job, Replica
from resources.free import free_resources_refresh
from resources.models import Node
from resources.selectors import nodes_overview
from resources.services import node_set_state
from tests.agent_support import attempts_of, wait_for_state
from tests.factories import JobFactory, UserFactory
from tests.support.waiting import wait_until

pytestmark = pytest.mark.integration
WAIT = 90


def slurm_node(name: str) -> cli.SlurmNode:
    return next(node for node in cli.nodes() if node.name == name)


def nothing_allocated(name: str) -> bool:
    node = slurm_node(name)
    return (node.cpus_allocated, node.memory_allocated_mib, node.gpus_allocated) == (0, 0, 0)


@pytest.fixture
def outside(slurm, slurm_cluster_alone):
    """Submits jobs past Trainyard (``sbatch --wrap``), and cancels them at the end."""
    submitted: list[str] = []
    env = {"PATH": os.defpath, "SLURM_CONF": str(slurm.cluster.conf)}

    def sbatch(node: str, *, cards: int, cpus: int, memory_mib: int) -> str:
        # Another session's leftovers (cancelled, still completing) would count too.
        wait_until(lambda: nothing_allocated(node), what=f"{node} empty in Slurm")
        argv = [
            "sbatch",
            "--parsable",
            "--partition=trainyard",
            f"--nodelist={node}",
            f"--gres=gpu:v100:{cards}",
            f"--cpus-per-task={cpus}",
            f"--mem={memory_mib}M",
            "--job-name=someone-elses-job",
            "--output=/dev/null",
            "--wrap=sleep 300",
        ]
        result = subprocess.run(argv, env=env, capture_output=True, text=True, check=True)
        job_id = result.stdout.strip().split(";")[0]
        submitted.append(job_id)
        wait_until(lambda: slurm_node(node).gpus_allocated == cards, what="the sbatch job runs")
        return job_id

    yield sbatch
    with contextlib.suppress(cli.SlurmUnavailable):
        cli.cancel(submitted)


def held(node: Node) -> tuple[int, int, int]:
    node.refresh_from_db()
    return node.gpu_held_outside, node.cpu_held_outside_milli, node.memory_held_outside_mib


def test_a_job_outside_trainyard_holds_cards_that_the_sync_and_the_free_panel_count(
    slurm, outside, owner_client
):
    gpu04 = slurm.nodes[3]
    outside(gpu04.name, cards=3, cpus=4, memory_mib=8192)

    report = inventory_sync()
    assert gpu04.name in report.held_outside
    assert held(gpu04) == (3, 4_000, 8192)
    assert nodes_overview().get(pk=gpu04.pk).cards_free == 1
    # The other nodes hold nothing of anyone's.
    assert [held(node) for node in slurm.nodes[:3]] == [(0, 0, 0)] * 3

    panel = free_panel(user=UserFactory(), snapshot=free_resources_refresh())
    [v100] = [row for row in panel["gpu_models"] if row["name"] == "V100"]
    assert (v100["free_cards"], v100["total_cards"], v100["held_outside_cards"]) == (13, 16, 3)
    html = owner_client.get(reverse("resources:overview")).content.decode()
    row = html[html.index(f"<td>{gpu04.name}</td>") :].split("</tr>")[0]
    assert "<td>1 / 4</td>" in row
    assert "3 cards, 4 cores, 8 GiB" in row


def test_a_job_that_fits_only_on_cards_held_outside_waits_inside_slurm_in_its_words(slurm, outside):
    """Slurm places it: it waits in Slurm's queue behind the job outside Trainyard, off the
    nodes a Trainyard admin drained (``--exclude``), and starts where Slurm frees cards."""
    gpu04 = slurm.nodes[3]
    for node in slurm.nodes[:3]:  # drained here only: Slurm's view of them stays
        node_set_state(node=node, state=Node.State.DRAINING, reason="Not for this test")
    foreign_id = outside(gpu04.name, cards=3, cpus=4, memory_mib=8192)
    inventory_sync()

    job = JobFactory(
        owner=UserFactory(username="slurm-user"),
        gpu_model=gpu04.gpu_model,
        gpu_count=2,
        cpu_milli=2_000,
        memory_mib=2048,
        command="sleep 30",
    )
    waiting = wait_until(
        lambda: [a for a in attempts_of(job) if a.external_id], what="in Slurm", timeout=WAIT
    )
    slurm_id = waiting[0].external_id
    words = (
        f"Slurm job {slurm_id} is waiting in Slurm's queue: "
        "the resources it needs are in use by other Slurm jobs."
    )
    wait_until(lambda: Job.objects.get(pk=job.pk).state_reason == words, what=words, timeout=WAIT)
    assert Replica.objects.get(job=job).node is None
    assert slurm.jobs()[slurm_id].state == "PENDING"

    cli.cancel([foreign_id])
    job = wait_for_state(job, Job.State.RUNNING, slurm.worker, timeout=WAIT)
    assert [r.node_id for r in Replica.objects.filter(job=job)] == [gpu04.pk]

    # Trainyard's own Slurm job is not outside Trainyard, though Slurm counts it.
    wait_until(lambda: nothing_allocated_but(gpu04.name, cards=2), what="only ours on gpu04")
    inventory_sync()
    assert held(gpu04) == (0, 0, 0)


def nothing_allocated_but(name: str, *, cards: int) -> bool:
    return slurm_node(name).gpus_allocated == cards
