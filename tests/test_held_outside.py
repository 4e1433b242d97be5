"""What jobs outside Trainyard hold on Slurm nodes: read from Slurm, recorded per node, and
counted as taken by the scheduler, the free panel and the resources page (no cluster here;
tests/test_slurm_held_outside.py runs it on the real one)."""

import pytest
from django.urls import reverse
from django.utils import translation

from jobs.execution.slurm import cli
from jobs.execution.slurm.held_outside import Held, held_outside, trainyard_replicas
from jobs.execution.slurm.inventory import inventory_sync
from jobs.free_panel import free_panel
from jobs.lifecycle.pass_requests import request_pass
from jobs.models import Job, Replica
from jobs.scheduler import run_pass
from jobs.scheduler.cluster import Cluster
from resources.free import free_resources_refresh
from resources.models import Node
from tests.factories import GpuModelFactory, JobFactory, NodeFactory, ReplicaAttemptFactory
from tests.scheduling import assert_invariants, fresh

pytestmark = pytest.mark.django_db
GIB = 1024


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("gpu:v100:2(IDX:0-1)", [cli.GresUse("v100", 2, (0, 1))]),
        ("gpu:v100:0(IDX:N/A)", [cli.GresUse("v100", 0, ())]),
        ("gpu:2(IDX:0,2)", [cli.GresUse("", 2, (0, 2))]),
        ("gpu:v100:3(IDX:0-1,3)", [cli.GresUse("v100", 3, (0, 1, 3))]),
        ("gpu:3090:1(IDX:1)", [cli.GresUse("3090", 1, (1,))]),
        ("gpu:v100:2", [cli.GresUse("v100", 2, ())]),
        (
            "gpu:v100:1(IDX:3),gpu:a100:2(IDX:0,1)",
            [cli.GresUse("v100", 1, (3,)), cli.GresUse("a100", 2, (0, 1))],
        ),
        ("mps:v100:50(IDX:0),gpu:v100:1(IDX:1),shard:2(IDX:1)", [cli.GresUse("v100", 1, (1,))]),
        ("", []),
        ("(null)", []),
    ],
)
def test_gres_used_gives_the_cards_in_use(text, expected):
    assert cli.gres_used(text) == expected


SINFO_NODE = {
    "name": "gpu01",
    "state": "mixed",
    "state_flags": [],
    "cpus": 48,
    "real_memory": 229376,
    "temporary_disk": 0,
    "gres": "gpu:v100:4",
    "partitions": ["trainyard"],
    "address": "127.0.0.1",
    "threads": 1,
    # Slurm 22.05's sinfo --json, as the dev cluster prints it with a 3-CPU 2-card job.
    "alloc_cpus": 3,
    "alloc_memory": 2000,
    "gres_used": "gpu:v100:2(IDX:0-1)",
}


def slurm_node(**changes) -> cli.SlurmNode:
    return cli._node({**SINFO_NODE, **changes})


def test_sinfo_json_gives_what_slurm_has_allocated_on_the_node():
    node = slurm_node()
    assert (node.cpus_allocated, node.memory_allocated_mib, node.gpus_allocated) == (3, 2000, 2)
    idle = slurm_node(alloc_cpus=0, alloc_memory=0, gres_used="gpu:v100:0(IDX:N/A)")
    assert (idle.cpus_allocated, idle.memory_allocated_mib, idle.gpus_allocated) == (0, 0, 0)


def test_held_outside_is_slurms_allocation_less_trainyards_own():
    node = slurm_node(alloc_cpus=10, alloc_memory=20_000, gres_used="gpu:v100:3(IDX:0-2)")
    assert held_outside(node, []) == Held(10_000, 20_000, 3)
    # A Trainyard replica of 1.5 cores holds 2 CPUs in Slurm (sbatch asks for whole CPUs).
    assert held_outside(node, [Held(1_500, 4_096, 1)]) == Held(8_000, 15_904, 2)


def test_held_outside_rounds_trainyards_cpus_up_to_whole_cores():
    node = slurm_node(alloc_cpus=6, threads=2)
    # 3 CPUs asked on a node of 2 threads per core: Slurm gives 2 cores, 4 CPUs.
    assert held_outside(node, [Held(3_000, 0, 0)]).cpu_milli == 2_000


def test_held_outside_is_never_below_zero():
    # A Trainyard job Slurm had not counted yet when sinfo answered.
    node = slurm_node(alloc_cpus=2, alloc_memory=1_000, gres_used="gpu:v100:1(IDX:0)")
    assert held_outside(node, [Held(4_000, 8_000, 2)]) == Held(0, 0, 0)


def squeue(**states: str):
    """``cli.jobs`` answering these Slurm job ids in these states."""

    def jobs(*, name_prefix: str) -> dict[str, cli.SlurmJob]:
        return {
            job_id: cli.SlurmJob(job_id, f"{name_prefix}x", state, "", None, None, None, "")
            for job_id, state in states.items()
        }

    return jobs


def test_trainyard_holds_only_what_slurm_has_started_of_its_jobs(monkeypatch):
    v100 = GpuModelFactory(name="V100")
    node = NodeFactory(name="gpu01", gpu_model=v100, executor="slurm", from_slurm=True)
    running = JobFactory(gpu_model=v100, gpu_count=2, cpu_milli=3_000, memory_mib=4_096)
    pending = JobFactory(gpu_model=v100, gpu_count=1)
    ReplicaAttemptFactory(replica__job=running, replica__node=node, external_id="11")
    ReplicaAttemptFactory(replica__job=pending, replica__node=node, external_id="12")
    monkeypatch.setattr(cli, "jobs", squeue(**{"11": "RUNNING", "12": "PENDING"}))
    # The pending one holds nothing in Slurm: it never hides the use that keeps it pending.
    assert trainyard_replicas() == {"gpu01": [Held(3_000, 4_096, 2)]}


def test_a_job_slurm_placed_counts_where_slurm_runs_it_before_its_start_is_recorded(
    monkeypatch,
):
    v100 = GpuModelFactory(name="V100")
    NodeFactory(name="gpu01", gpu_model=v100, executor="slurm", from_slurm=True)
    job = JobFactory(gpu_model=v100, gpu_count=2, cpu_milli=3_000, memory_mib=4_096)
    ReplicaAttemptFactory(replica__job=job, replica__node=None, node=None, external_id="11")

    def jobs(*, name_prefix: str):
        running = cli.SlurmJob("11", f"{name_prefix}x", "RUNNING", "", None, None, None, "gpu01")
        return {"11": running}

    monkeypatch.setattr(cli, "jobs", jobs)
    assert trainyard_replicas() == {"gpu01": [Held(3_000, 4_096, 2)]}


def test_a_gang_slurm_placed_counts_a_replica_on_each_node_slurm_runs_it_on(monkeypatch):
    """Before its starts are recorded: one replica on each node of Slurm's list that no
    recorded replica of it is on."""
    v100 = GpuModelFactory(name="V100")
    gpu01, *_ = [
        NodeFactory(name=f"gpu0{n}", gpu_model=v100, executor="slurm", from_slurm=True)
        for n in (1, 2, 3)
    ]
    job = JobFactory(
        gpu_model=v100,
        gpu_count=2,
        cpu_milli=3_000,
        memory_mib=4_096,
        replicas=3,
        task_mode="distributed",
    )
    ReplicaAttemptFactory(replica__job=job, replica__node=gpu01, external_id="11")
    for index in (1, 2):
        ReplicaAttemptFactory(
            replica__job=job, replica__index=index, replica__node=None, node=None, external_id="11"
        )

    def jobs(*, name_prefix: str):
        nodes = "gpu[01-03]"
        return {"11": cli.SlurmJob("11", f"{name_prefix}x", "RUNNING", "", None, None, None, nodes)}

    monkeypatch.setattr(cli, "jobs", jobs)
    held = Held(3_000, 4_096, 2)
    assert trainyard_replicas() == {"gpu01": [held], "gpu02": [held], "gpu03": [held]}


def test_sync_records_held_outside_and_asks_for_a_pass_when_it_changes(
    monkeypatch, settings, django_capture_on_commit_callbacks
):
    GpuModelFactory(name="V100")
    settings.TRAINYARD_SLURM_PARTITION = "trainyard"
    monkeypatch.setattr(cli, "jobs", squeue())
    monkeypatch.setattr(cli, "nodes", lambda: [slurm_node()])
    inventory_sync()
    node = Node.objects.get(name="gpu01")
    held = (node.gpu_held_outside, node.cpu_held_outside_milli, node.memory_held_outside_mib)
    assert held == (2, 3_000, 2_000)

    monkeypatch.setattr(cli, "nodes", lambda: [slurm_node(gres_used="gpu:v100:3(IDX:0-2)")])
    with django_capture_on_commit_callbacks() as callbacks:
        report = inventory_sync()
    assert (report.held_outside, report.updated) == (["gpu01"], [])
    assert request_pass in callbacks
    assert Node.objects.get(name="gpu01").gpu_held_outside == 3

    with django_capture_on_commit_callbacks() as callbacks:
        report = inventory_sync()
    assert report.held_outside == [] and request_pass not in callbacks


@pytest.fixture
def v100():
    return GpuModelFactory(name="V100")


def slurm_gpu_node(v100, **held) -> Node:
    node = NodeFactory(
        name="gpu01", gpu_model=v100, gpu_count=4, cpu_milli=48_000, memory_mib=224 * GIB
    )
    Node.objects.filter(pk=node.pk).update(executor="slurm", from_slurm=True, **held)
    node.refresh_from_db()
    return node


def placed_by_trainyard(v100) -> None:
    """A local-agent node (down) serves V100 too: Trainyard places its jobs, on Slurm's
    nodes as well, and counts what is held outside (a model only Slurm serves is
    Slurm's to place: ``test_a_job_slurm_places_enters_slurm_whatever_is_held_outside``)."""
    NodeFactory(name="local", gpu_model=v100, gpu_count=4, state=Node.State.DOWN)


def test_the_pass_takes_the_cards_held_outside_from_the_highest_free_ones(v100):
    placed_by_trainyard(v100)
    node = slurm_gpu_node(
        v100, gpu_held_outside=2, cpu_held_outside_milli=8_000, memory_held_outside_mib=16 * GIB
    )
    [state] = Cluster.load().nodes.values()
    assert state.whole_free == 2
    assert [state.cards[i].compute_free for i in range(4)] == [100, 100, 0, 0]
    assert (state.cpu_free, state.memory_free) == (40_000, 208 * GIB)

    three = JobFactory(gpu_model=v100, gpu_count=3, cpu_milli=3_000, memory_mib=GIB)
    two = JobFactory(gpu_model=v100, gpu_count=2, cpu_milli=2_000, memory_mib=GIB)
    run_pass()
    assert fresh(three).state == Job.State.RESOURCE_WAIT
    assert fresh(three).state_reason.startswith(
        "Waiting for resources: needs a node with 3 free V100 cards; none has them"
    )
    assert Replica.objects.get(job=two).card_indices == [0, 1]
    assert_invariants()
    node.refresh_from_db()
    assert node.gpu_allocated == 2


def test_cpu_and_memory_held_outside_keep_a_job_waiting(v100):
    placed_by_trainyard(v100)
    slurm_gpu_node(v100, cpu_held_outside_milli=46_000)
    job = JobFactory(gpu_model=v100, gpu_count=1, cpu_milli=4_000, memory_mib=GIB)
    run_pass()
    assert fresh(job).state == Job.State.RESOURCE_WAIT
    assert "4 free CPU cores" in fresh(job).state_reason


def test_a_job_that_waits_on_cards_held_outside_trainyard_says_so(v100):
    placed_by_trainyard(v100)
    slurm_gpu_node(v100, gpu_held_outside=3)
    job = JobFactory(gpu_model=v100, gpu_count=2, cpu_milli=2_000, memory_mib=GIB)
    run_pass()
    assert fresh(job).state_reason == (
        "Waiting for resources: needs a node with 2 free V100 cards; none has them; "
        "jobs outside Trainyard hold 3 V100 cards on those nodes"
    )
    with translation.override("zh-hans"):
        assert "Trainyard 之外的任务占用" in fresh(job).reason_text


def test_a_job_slurm_places_enters_slurm_whatever_is_held_outside(v100):
    """Slurm sees what its other jobs hold; the job waits there, in Slurm's words."""
    slurm_gpu_node(v100, gpu_held_outside=3)
    job = JobFactory(gpu_model=v100, gpu_count=2, cpu_milli=2_000, memory_mib=GIB)
    run_pass()
    assert fresh(job).state_reason == "Submitted to Slurm, which picks the V100 node and cards"


def test_free_panel_counts_what_is_held_outside_as_taken(v100, owner):
    slurm_gpu_node(
        v100, gpu_held_outside=3, cpu_held_outside_milli=6_000, memory_held_outside_mib=8 * GIB
    )
    NodeFactory(name="gpu02", gpu_model=v100, gpu_count=2, cpu_milli=24_000, memory_mib=64 * GIB)
    panel = free_panel(user=owner, snapshot=free_resources_refresh())
    [row] = [row for row in panel["gpu_models"] if row["name"] == "V100"]
    assert (row["free_cards"], row["total_cards"], row["largest_free_on_one_node"]) == (3, 6, 2)
    assert row["held_outside_cards"] == 3
    assert row["free_vgpu_compute_percent"] == 300
    cpu = panel["cpu"]
    assert (cpu["free_cores"], cpu["largest_free_cores_on_one_node"]) == (66, 42)
    assert (cpu["held_outside_cores"], cpu["held_outside_memory_gib"]) == (6, 8)
    assert cpu["free_memory_gib"] == 224 + 64 - 8


def test_api_free_resources_says_what_is_held_outside(v100, owner_client):
    slurm_gpu_node(v100, gpu_held_outside=1, cpu_held_outside_milli=2_000)
    free_resources_refresh()
    data = owner_client.get("/api/v1/resources/free").json()
    [row] = [row for row in data["gpu_models"] if row["name"] == "V100"]
    assert (row["free_cards"], row["held_outside_cards"]) == (3, 1)
    assert data["cpu"]["held_outside_cores"] == 2


def test_resources_page_shows_what_jobs_outside_trainyard_hold(v100, owner_client):
    slurm_gpu_node(
        v100, gpu_held_outside=3, cpu_held_outside_milli=6_000, memory_held_outside_mib=8 * GIB
    )
    NodeFactory(name="gpu02", gpu_model=v100, gpu_count=2)
    free_resources_refresh()
    html = owner_client.get(reverse("resources:overview")).content.decode()
    assert "Held by jobs outside Trainyard" in html
    gpu01 = html[html.index("<td>gpu01</td>") :].split("</tr>")[0]
    assert "<td>1 / 4</td>" in gpu01
    assert "3 cards, 6 cores, 8 GiB" in gpu01
    gpu02 = html[html.index("<td>gpu02</td>") :].split("</tr>")[0]
    assert '<td class="held-outside">—</td>' in gpu02
    assert "(3 held by jobs outside Trainyard)" in html  # the free panel's V100 row
    assert "6 held by jobs outside Trainyard" in html  # its CPU line

    owner_client.post(reverse("set_language"), {"language": "zh-hans", "next": "/"})
    html = owner_client.get(reverse("resources:overview")).content.decode()
    assert "Trainyard 以外的任务占用" in html
    assert "3 张卡、6 核、8 GiB" in html
    assert "（其中 3 张由 Trainyard 以外的任务占用）" in html


def test_admin_sees_what_is_held_outside_on_a_slurm_node(v100, admin_client_):
    node = slurm_gpu_node(
        v100, gpu_held_outside=2, cpu_held_outside_milli=3_000, memory_held_outside_mib=2_048
    )
    page = admin_client_.get(reverse("admin:resources_node_change", args=[node.pk]))
    html = page.content.decode()
    for label in ("GPU cards held outside", "CPU held outside", "Memory held outside"):
        assert label in html
    assert 'name="gpu_held_outside"' not in html  # the sync's, read-only
    assert 'name="cpu_held_outside_milli"' not in html
