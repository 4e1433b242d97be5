"""The free-resource hint: the snapshot, its panel, its refresh, the API and the task."""

import re
import time

import pytest
from django.urls import reverse

from jobs.free_panel import free_panel
from jobs.models import Job
from resources.free import free_resources_compute, free_resources_refresh
from resources.models import FreeResourceSnapshot, GpuCard, GpuModel, Node, Quota
from resources.selectors import nodes_overview
from resources.tasks import refresh_free_resources
from tests.factories import JobFactory, QuotaFactory
from tests.job_site import GIB, build_site

pytestmark = pytest.mark.django_db


@pytest.fixture
def site(project, owner):
    return build_site(project=project, billing_for=[owner])


def by_name(data: dict) -> dict:
    return {row["name"]: row for row in data["gpu_models"]}


def test_free_and_total_cards_per_model(site):
    cards = GpuCard.objects.filter(node__name="v100-a").order_by("index")
    cards.filter(index__lt=3).update(compute_allocated_percent=100, memory_allocated_mib=16 * GIB)
    # A card with a virtual-GPU share on it is no longer free for a whole-card job.
    cards.filter(index=3).update(compute_allocated_percent=30, memory_allocated_mib=4 * GIB)
    v100 = by_name(free_resources_compute())["V100"]
    assert v100["free_cards"] == 12
    assert v100["total_cards"] == 16
    assert v100["largest_free_on_one_node"] == 8
    assert v100["nodes"] == 2
    assert v100["free_vgpu_compute_percent"] == 1600 - 300 - 30


def test_aggregated_model_adds_up_its_members(site):
    rows = by_name(free_resources_compute())
    assert rows["*V100"]["total_cards"] == 16 + 4
    assert rows["*V100"]["largest_free_on_one_node"] == 8
    assert rows["*V100"]["aggregated"] is True


def test_nodes_that_are_not_ready_are_left_out(site):
    Node.objects.filter(name__in=["v100-b", "cpu-a"]).update(state=Node.State.DRAINING)
    data = free_resources_compute()
    assert by_name(data)["V100"]["total_cards"] == 8
    assert data["cpu"]["total_cores"] == 96 + 48 + 12


def test_cpu_and_memory_over_ready_nodes(site):
    Node.objects.filter(name="v100-a").update(
        cpu_allocated_milli=90_000, memory_allocated_mib=400 * GIB
    )
    cpu = free_resources_compute()["cpu"]
    assert cpu["total_cores"] == 96 + 96 + 48 + 12 + 32
    assert cpu["free_cores"] == 284 - 90
    assert cpu["largest_free_cores_on_one_node"] == 96
    assert cpu["total_memory_gib"] == 448 + 448 + 224 + 40 + 128
    assert cpu["largest_free_memory_gib_on_one_node"] == 448


def test_model_without_nodes_shows_zero(site):
    GpuModel.objects.create(
        name="A100", card_memory_gib=40, cpu_cores_per_card=16, memory_gib_per_card=100
    )
    assert by_name(free_resources_compute())["A100"]["total_cards"] == 0


def test_users_free_quota(site, owner):
    QuotaFactory(user=owner, gpu_model=site.v100, resource=Quota.Resource.GPU, limit=8)
    QuotaFactory(user=owner, gpu_model=None, resource=Quota.Resource.CPU, limit=64_000)
    JobFactory(
        owner=owner,
        project=site.project,
        gpu_model=site.v100,
        gpu_count=3,
        state=Job.State.RUNNING,
        cpu_milli=36_000,
    )
    quota = free_panel(user=owner)["quota"]
    v100 = next(q for q in quota["gpu"] if q["model"] == "V100")
    assert v100 == {"model": "V100", "limit": 8, "used": 3, "free": 5}
    assert quota["cpu_cores"] == {"limit": 64.0, "used": 36.0, "free": 28.0}
    assert quota["memory_gib"]["limit"] is None  # no row: no limit


def test_panel_is_a_snapshot_until_refreshed(site, owner):
    first = free_panel(user=owner)
    Node.objects.filter(name="v100-a").update(state=Node.State.DOWN)
    assert by_name(free_panel(user=owner))["V100"]["total_cards"] == 16
    refreshed = free_panel(user=owner, snapshot=free_resources_refresh())
    assert by_name(refreshed)["V100"]["total_cards"] == 8
    assert refreshed["as_of"] >= first["as_of"]


def test_refresh_keeps_only_the_newest_snapshot(site):
    free_resources_refresh()
    newest = free_resources_refresh()
    assert list(FreeResourceSnapshot.objects.all()) == [newest]


def add_nodes(count: int) -> None:
    model = GpuModel.objects.get(name="V100")
    nodes = Node.objects.bulk_create(
        Node(
            name=f"bulk-{i:05d}",
            gpu_model=model,
            gpu_count=8,
            cpu_milli=96_000,
            memory_mib=448 * GIB,
        )
        for i in range(count)
    )
    GpuCard.objects.bulk_create(
        GpuCard(node=node, index=i, memory_mib=16 * GIB) for node in nodes for i in range(8)
    )


@pytest.mark.parametrize("nodes", [10, 1000])
def test_compute_takes_fixed_queries(site, nodes, django_assert_num_queries):
    add_nodes(nodes)
    with django_assert_num_queries(4):
        data = free_resources_compute()
    assert by_name(data)["V100"]["total_cards"] == 16 + 8 * nodes


@pytest.mark.parametrize("nodes", [10, 1000])
def test_panel_takes_fixed_queries(site, owner, nodes, django_assert_max_num_queries):
    add_nodes(nodes)
    free_resources_refresh()
    # The snapshot, then the user's quota rows and usage (a few, whatever the node count).
    with django_assert_max_num_queries(6):
        free_panel(user=owner)


def test_resources_page_shows_the_panel(owner_client, site):
    html = owner_client.get(reverse("resources:overview")).content.decode()
    assert 'id="free-panel"' in html
    assert "As of" in html
    assert "V100-32G" in html


def test_refresh_with_htmx_renders_only_the_panel(owner_client, site):
    Node.objects.filter(name="p4-a").update(state=Node.State.DOWN)
    response = owner_client.post(reverse("resources:free_refresh"), HTTP_HX_REQUEST="true")
    html = response.content.decode()
    assert response.status_code == 200
    assert html.lstrip().startswith('<section id="free-panel"')
    assert "<html" not in html
    assert by_name(FreeResourceSnapshot.objects.get().data)["P4"]["total_cards"] == 0


def test_refresh_without_javascript_returns_to_the_page(owner_client, site):
    response = owner_client.post(reverse("resources:free_refresh"), {"next": "/jobs/new/"})
    assert response.status_code == 302
    assert response["Location"] == "/jobs/new/"


def test_refresh_refuses_an_outside_next_url(owner_client, site):
    response = owner_client.post(
        reverse("resources:free_refresh"), {"next": "https://evil.example/"}
    )
    assert response["Location"] == reverse("resources:overview")


def test_refresh_needs_post(owner_client, site):
    assert owner_client.get(reverse("resources:free_refresh")).status_code == 405


def test_api_free_resources(owner_client, site):
    data = owner_client.get("/api/v1/resources/free").json()
    assert set(data) == {"as_of", "gpu_models", "cpu", "quota"}
    v100 = by_name(data)["V100"]
    assert {k: v100[k] for k in ("free_cards", "total_cards", "largest_free_on_one_node")} == {
        "free_cards": 16,
        "total_cards": 16,
        "largest_free_on_one_node": 8,
    }
    assert data["cpu"]["total_cores"] == 284


def test_api_refresh_recomputes(owner_client, site):
    before = owner_client.get("/api/v1/resources/free").json()
    Node.objects.filter(name="v100-b").update(state=Node.State.DOWN)
    assert by_name(owner_client.get("/api/v1/resources/free").json())["V100"]["total_cards"] == 16
    after = owner_client.post("/api/v1/resources/free/refresh").json()
    assert by_name(after)["V100"]["total_cards"] == 8
    assert after["as_of"] >= before["as_of"]


def test_task_refreshes_the_snapshot(site):
    refresh_free_resources()
    assert FreeResourceSnapshot.objects.count() == 1


@pytest.mark.integration
def test_celery_worker_runs_the_refresh(start_celery_worker, project, owner):
    build_site(project=project)
    start_celery_worker()
    refresh_free_resources.delay()
    deadline = time.monotonic() + 30
    while not FreeResourceSnapshot.objects.exists() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert by_name(FreeResourceSnapshot.objects.get().data)["V100"]["total_cards"] == 16


def test_the_nodes_table_counts_a_card_with_a_share_on_it_as_taken(owner_client, site):
    # The panel above it counts only wholly free cards; the node's row must agree, though
    # a share is not a whole card allocated (``Node.gpu_allocated`` counts those alone).
    card = GpuCard.objects.get(node__name="v100-a", index=0)
    card.compute_allocated_percent, card.memory_allocated_mib = 30, 2 * GIB
    card.save()
    html = owner_client.get(reverse("resources:overview")).content.decode()
    row = re.search(r"<td>v100-a</td>\s*<td>[^<]*</td>\s*<td>([^<]*)</td>", html)
    assert row is not None and row.group(1) == "7 / 8"


@pytest.mark.parametrize("nodes", [10, 1000])
def test_the_node_table_takes_one_query_whatever_the_nodes(site, nodes, django_assert_num_queries):
    add_nodes(nodes)
    with django_assert_num_queries(1):  # the nodes, their model and free cards counted
        rows = list(nodes_overview())
    bulk = [row.cards_free for row in rows if row.name.startswith("bulk-")]
    assert len(rows) == 5 + nodes and bulk == [8] * nodes
