"""The feasibility check: node capacity (not free amounts) and the user's whole quota."""

import pytest

from resources.feasibility import NON_FIELD, request_feasibility
from resources.models import Node, Quota
from resources.request import ResourceRequest
from tests.factories import GpuModelFactory, NodeFactory, QuotaFactory
from tests.job_site import GIB, build_site

pytestmark = pytest.mark.django_db


@pytest.fixture
def site(project, owner):
    return build_site(project=project, billing_for=[owner])


def gpu(model, count, *, cores=12, memory_gib=56, replicas=1, storage=10) -> ResourceRequest:
    return ResourceRequest(
        kind="gpu",
        gpu_model=model,
        gpu_count=count,
        cpu_milli=cores * 1000,
        memory_mib=memory_gib * GIB,
        storage_gib=storage,
        replicas=replicas,
    )


def vgpu(model, count, percent, memory_gib, *, replicas=1) -> ResourceRequest:
    return ResourceRequest(
        kind="vgpu",
        gpu_model=model,
        gpu_count=count,
        vgpu_compute_percent=percent,
        vgpu_memory_mib=memory_gib * GIB,
        cpu_milli=6000,
        memory_mib=28 * GIB,
        replicas=replicas,
    )


def cpu(cores, memory_gib, *, replicas=1) -> ResourceRequest:
    return ResourceRequest(
        kind="cpu", cpu_milli=cores * 1000, memory_mib=memory_gib * GIB, replicas=replicas
    )


def test_single_gpu_request_that_a_node_holds_is_feasible(site):
    result = request_feasibility(request=gpu(site.v100, 8, cores=96, memory_gib=448))
    assert result.feasible
    assert result.reasons == []


def test_capacity_counts_not_free_cards(site):
    Node.objects.filter(gpu_model=site.v100).update(gpu_allocated=8)
    assert request_feasibility(request=gpu(site.v100, 8)).feasible


def test_too_many_cards_names_the_largest_node(site):
    result = request_feasibility(request=gpu(site.v100, 16))
    assert not result.feasible
    assert result.errors == {"gpu_count": ["no node has 16 V100 cards (largest: 8)"]}


def test_cpu_request_larger_than_any_node(site):
    result = request_feasibility(request=cpu(200, 64))
    assert result.errors == {"cpu_cores": ["no node has 200 CPU cores (largest: 96)"]}


def test_gpu_request_names_its_model_for_cpu_and_memory(site):
    result = request_feasibility(request=gpu(site.v100, 1, cores=100, memory_gib=500))
    assert result.errors == {
        "cpu_cores": ["no node with V100 cards has 100 CPU cores (largest: 96)"],
        "memory_gib": ["no node with V100 cards has 500 GiB of memory (largest: 448 GiB)"],
    }


def test_storage_larger_than_any_node(site):
    result = request_feasibility(request=gpu(site.v100, 1, storage=600))
    assert result.errors["storage_gib"] == [
        "no node with V100 cards has 600 GiB of temporary storage (largest: 500 GiB)"
    ]


def test_no_single_node_with_everything_at_once(db):
    model = GpuModelFactory(name="T4", card_memory_gib=16)
    NodeFactory(name="many-cards", gpu_model=model, gpu_count=8, cpu_milli=16_000)
    NodeFactory(name="many-cores", gpu_model=model, gpu_count=2, cpu_milli=96_000)
    result = request_feasibility(request=gpu(model, 4, cores=48))
    assert result.errors == {NON_FIELD: ["no single node has all of this request at once"]}


def test_model_without_ready_nodes(site):
    Node.objects.filter(gpu_model=site.p4).update(state=Node.State.DOWN)
    result = request_feasibility(request=gpu(site.p4, 1, memory_gib=40))
    assert result.errors == {"gpu_model": ["no ready node has P4 cards"]}


def test_distributed_needs_as_many_distinct_nodes_as_replicas(site):
    assert request_feasibility(request=gpu(site.v100, 8, replicas=2)).feasible
    result = request_feasibility(request=gpu(site.v100, 8, replicas=3))
    assert result.errors == {
        "replicas": ["only 2 nodes can hold one replica each, but 3 replicas need 3 distinct nodes"]
    }


def test_draining_node_does_not_count(site):
    Node.objects.filter(name="v100-b").update(state=Node.State.DRAINING)
    result = request_feasibility(request=gpu(site.v100, 8, replicas=2))
    assert list(result.errors) == ["replicas"]


def test_vgpu_fits_on_a_card_with_the_memory(site):
    assert request_feasibility(request=vgpu(site.v100, 2, 50, 8)).feasible


def test_vgpu_memory_above_every_card(site):
    result = request_feasibility(request=vgpu(site.v100, 1, 50, 20))
    assert result.errors == {
        "vgpu_memory_gib": ["no V100 card has 20 GiB of GPU memory (largest: 16 GiB)"]
    }


def test_vgpu_needs_a_model_that_supports_it(site):
    result = request_feasibility(request=vgpu(site.p4, 1, 50, 4))
    assert result.errors == {"gpu_model": ["no ready node has P4 cards that support virtual GPUs"]}


def test_aggregated_model_uses_any_member_node(site):
    # Three distinct nodes have 4 cards: v100-a, v100-b (V100) and v100x-a (V100-32G).
    assert request_feasibility(request=gpu(site.star_v100, 4, cores=48, replicas=3)).feasible
    result = request_feasibility(request=gpu(site.star_v100, 8, cores=48, replicas=3))
    assert list(result.errors) == ["replicas"]


def test_aggregated_vgpu_finds_the_member_with_larger_cards(site):
    assert request_feasibility(request=vgpu(site.star_v100, 1, 50, 20)).feasible
    result = request_feasibility(request=vgpu(site.star_v100, 1, 50, 40))
    assert result.errors["vgpu_memory_gib"] == [
        "no *V100 card has 40 GiB of GPU memory (largest: 32 GiB)"
    ]


def test_request_above_the_whole_quota_is_infeasible(site, owner):
    QuotaFactory(user=owner, resource=Quota.Resource.CPU, gpu_model=None, limit=64_000)
    result = request_feasibility(request=cpu(48, 96, replicas=2), user=owner)
    assert result.errors == {
        "cpu_cores": ["the job needs 96 CPU cores in total; your whole quota is 64"]
    }
    assert request_feasibility(request=cpu(48, 96, replicas=2)).feasible  # no user, no quota


def test_quota_in_use_does_not_make_a_request_infeasible(site, owner):
    QuotaFactory(user=owner, gpu_model=site.v100, resource=Quota.Resource.GPU, limit=8)
    Node.objects.filter(gpu_model=site.v100).update(gpu_allocated=8)
    assert request_feasibility(request=gpu(site.v100, 8), user=owner).feasible


def test_query_count_does_not_grow_with_nodes(site, owner, django_assert_max_num_queries):
    for i in range(30):
        NodeFactory(name=f"extra-{i}", gpu_model=site.v100)
    # Members, nodes (one aggregate), quota rows, and the model catalog (two).
    with django_assert_max_num_queries(5):
        request_feasibility(request=gpu(site.star_v100, 4, replicas=2), user=owner)


def test_api_feasible(owner_client, site):
    body = {"resources": {"kind": "gpu", "gpu_model": "V100", "gpu_count": 2}}
    response = owner_client.post(
        "/api/v1/resources/feasibility", body, content_type="application/json"
    )
    assert response.status_code == 200
    assert response.json() == {"feasible": True, "reasons": []}


def test_api_infeasible_distributed(owner_client, site):
    body = {
        "task_mode": "distributed",
        "replicas": 3,
        "resources": {"kind": "gpu", "gpu_model": "V100", "gpu_count": 8},
    }
    response = owner_client.post(
        "/api/v1/resources/feasibility", body, content_type="application/json"
    )
    assert response.json() == {
        "feasible": False,
        "reasons": ["only 2 nodes can hold one replica each, but 3 replicas need 3 distinct nodes"],
    }


def test_api_bad_input_is_422(owner_client, site):
    body = {"resources": {"kind": "vgpu", "gpu_model": "V100", "vgpu_compute_percent": 101}}
    response = owner_client.post(
        "/api/v1/resources/feasibility", body, content_type="application/json"
    )
    assert response.status_code == 422
    assert list(response.json()["errors"]) == ["vgpu_compute_percent"]


def test_cards_of_a_model_count_against_its_aggregate_quota(site, owner):
    QuotaFactory(user=owner, gpu_model=site.star_v100, resource=Quota.Resource.GPU, limit=4)
    result = request_feasibility(request=gpu(site.v100, 8), user=owner)
    assert result.errors == {
        "gpu_count": ["the job needs 8 *V100 cards in total; your whole quota is 4"]
    }


def test_aggregated_replicas_must_fit_the_members_quotas(site, owner):
    QuotaFactory(user=owner, gpu_model=site.v100, resource=Quota.Resource.GPU, limit=4)
    QuotaFactory(user=owner, gpu_model=site.v100_32g, resource=Quota.Resource.GPU, limit=0)
    request = gpu(site.star_v100, 4, cores=48, replicas=2)
    assert request_feasibility(request=request, user=owner).errors == {
        "gpu_count": [
            "your quotas of the models in *V100 (V100, V100-32G) hold 1 of the job's 2 replicas"
        ]
    }
    Quota.objects.filter(gpu_model=site.v100_32g).update(limit=4)
    assert request_feasibility(request=request, user=owner).feasible
