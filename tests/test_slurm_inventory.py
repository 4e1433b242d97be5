"""Slurm's nodes become Trainyard nodes: added, drained, brought back, and shown to admins."""

import contextlib
import io
import subprocess

import pytest
from django.core.management import call_command

from jobs.execution.slurm.inventory import inventory_sync
from resources.models import GpuCard, Node, SlurmGpuType
from resources.services import node_set_state
from tests.factories import GpuModelFactory
from tests.slurm_support import wait_for_controller
from tests.support.waiting import wait_until

pytestmark = pytest.mark.integration
PARTITION = ["gpu01", "gpu02", "gpu03", "gpu04"]


@pytest.fixture
def cluster(slurm_use, db, settings):
    settings.TRAINYARD_SLURM_ENABLED = True
    settings.TRAINYARD_SLURM_PARTITION = "trainyard"
    settings.TRAINYARD_SLURM_CONF = str(slurm_use.conf)
    wait_for_controller()
    return slurm_use


def node(name: str) -> Node:
    return Node.objects.get(name=name)


def sync_until_ready(name: str) -> None:
    """Slurm flags a resumed node NOT_RESPONDING (draining here) until its slurmd answers."""

    def ready() -> bool:
        inventory_sync()
        return node(name).state == Node.State.READY

    wait_until(ready, what=f"{name} ready again")


def test_sync_creates_one_slurm_node_per_node_of_the_partition(cluster):
    v100 = GpuModelFactory(name="V100")
    report = inventory_sync()
    assert sorted(report.created) == PARTITION
    gpu01 = node("gpu01")
    assert (gpu01.executor, gpu01.from_slurm, gpu01.state) == ("slurm", True, "ready")
    assert (gpu01.gpu_model, gpu01.gpu_count) == (v100, 4)
    assert (gpu01.cpu_milli, gpu01.memory_mib) == (48_000, 229_376)
    assert (gpu01.slurm_partitions, gpu01.address) == ("trainyard", "127.0.0.1")
    assert gpu01.last_heartbeat is not None
    assert GpuCard.objects.filter(node=gpu01).count() == 4
    # The match by name is kept as an admin-editable mapping.
    assert SlurmGpuType.objects.get(slurm_type="v100").gpu_model == v100

    again = inventory_sync()
    assert (again.created, again.updated, again.left) == ([], [], [])


@pytest.fixture
def spare(slurm_cluster_alone, cluster):
    """gpu05 joins partition trainyard for the test (only it changes state: tests running
    jobs on gpu01-gpu04 at the same time are not disturbed)."""
    GpuModelFactory(name="V100")
    inventory_sync()
    assert not Node.objects.filter(name="gpu05").exists()  # in the spare partition
    cluster.scontrol("update", "partitionname=trainyard", "nodes=gpu0[1-5]")
    yield "gpu05"
    cluster.scontrol("update", "partitionname=trainyard", "nodes=gpu0[1-4]")
    with contextlib.suppress(subprocess.CalledProcessError):  # resumed already
        cluster.scontrol("update", "nodename=gpu05", "state=resume")


def test_node_added_to_the_partition_appears_and_leaves_when_taken_out(cluster, spare):
    assert inventory_sync().created == [spare]
    assert node(spare).state == Node.State.READY
    assert node(spare).slurm_partitions == "trainyard,spare"
    cluster.scontrol("update", "partitionname=trainyard", "nodes=gpu0[1-4]")
    assert inventory_sync().left == [spare]
    gone = node(spare)
    assert gone.state == Node.State.DOWN
    assert gone.state_reason == "Slurm: no longer in partition trainyard."


def test_node_drained_in_slurm_stops_taking_work_until_slurm_resumes_it(cluster, spare):
    inventory_sync()
    cluster.scontrol("update", f"nodename={spare}", "state=drain", "reason=new disks")
    assert inventory_sync().updated == [spare]
    drained = node(spare)
    assert drained.state == Node.State.DRAINING
    assert drained.state_reason == "Slurm: IDLE DRAIN (new disks)"
    cluster.scontrol("update", f"nodename={spare}", "state=resume")
    sync_until_ready(spare)
    assert node(spare).state_reason == ""


def test_node_down_in_slurm_is_down_here_and_returns_with_it(cluster, spare):
    inventory_sync()
    cluster.scontrol("update", f"nodename={spare}", "state=down", "reason=fan failure")
    inventory_sync()
    assert node(spare).state == Node.State.DOWN
    assert node(spare).state_reason == "Slurm: DOWN (fan failure)"
    cluster.scontrol("update", f"nodename={spare}", "state=resume")
    sync_until_ready(spare)


def test_a_drain_set_by_a_trainyard_admin_stands(cluster):
    GpuModelFactory(name="V100")
    inventory_sync()
    node_set_state(node=node("gpu04"), state=Node.State.DRAINING, reason="Bad fan")
    inventory_sync()
    assert (node("gpu04").state, node("gpu04").state_reason) == (Node.State.DRAINING, "Bad fan")


def test_unmapped_gpu_type_keeps_nodes_down_until_an_admin_maps_it(cluster):
    inventory_sync()
    unmapped = node("gpu01")
    assert (unmapped.state, unmapped.gpu_model, unmapped.gpu_count) == ("down", None, 0)
    assert "v100" in unmapped.state_reason and "Slurm GPU types" in unmapped.state_reason

    p40 = GpuModelFactory(name="P40", card_memory_gib=24)
    SlurmGpuType.objects.create(slurm_type="v100", gpu_model=p40)
    inventory_sync()
    mapped = node("gpu01")
    assert (mapped.state, mapped.gpu_model, mapped.gpu_count) == ("ready", p40, 4)
    assert set(GpuCard.objects.filter(node=mapped).values_list("memory_mib", flat=True)) == {
        24 * 1024
    }


def test_capacity_never_drops_below_what_is_allocated(cluster):
    GpuModelFactory(name="V100")
    inventory_sync()
    Node.objects.filter(name="gpu01").update(cpu_milli=64_000, cpu_allocated_milli=50_000)
    inventory_sync()
    assert node("gpu01").cpu_milli == 50_000  # Slurm says 48 cores; 50 are still held


def test_admin_sees_which_nodes_come_from_slurm(cluster, admin_client_):
    GpuModelFactory(name="V100")
    inventory_sync()
    listing = admin_client_.get("/admin/resources/node/?from_slurm__exact=1").content.decode()
    for name in PARTITION:
        assert name in listing
    assert "trainyard" in listing  # the partitions column
    page = admin_client_.get(f"/admin/resources/node/{node('gpu01').pk}/change/")
    assert page.status_code == 200
    html = page.content.decode()
    assert "This node comes from Slurm" in html
    assert 'name="cpu_milli"' not in html  # capacity follows Slurm: read-only here
    assert 'name="storage_gib"' in html


def test_sync_command_says_what_changed(cluster):
    GpuModelFactory(name="V100")
    out = io.StringIO()
    call_command("slurm_sync", stdout=out)
    assert "created: gpu01, gpu02, gpu03, gpu04" in out.getvalue()
    out = io.StringIO()
    call_command("slurm_sync", stdout=out)
    assert "created: -" in out.getvalue()
