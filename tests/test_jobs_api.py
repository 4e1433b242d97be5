"""The jobs API: submit, list, read, stop, edit ports; ownership; the OpenAPI document."""

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from openapi_spec_validator import validate

from accounts.models import ApiToken
from jobs.models import Job
from jobs.services.submit import job_submit
from tests.factories import JobFactory
from tests.job_site import build_site, job_body

pytestmark = pytest.mark.django_db
JSON = "application/json"


@pytest.fixture
def site(project, owner):
    return build_site(project=project, billing_for=[owner])


@pytest.fixture
def job(site, owner) -> Job:
    return job_submit(user=owner, data=job_body(ports=[8080]))


def test_submit_queries_are_pinned(owner_client, site, django_assert_num_queries):
    owner_client.post("/api/v1/jobs", job_body(), content_type=JSON)  # warm the session
    # Resolve and check the input and create the job: no per-field round trips (the
    # database's constraints are not asked again row by row), and the answer is the job as
    # written, not read back (6 queries); its expected run time costs 4 (the estimator's
    # prior and the owner's runs of the command), and the owner's fair-share factor in the
    # answer 3 (jobs.selectors.with_fair_shares; the ledger's decayed usage summed by the
    # warm-up is kept for a refresh).
    with django_assert_num_queries(28):
        response = owner_client.post("/api/v1/jobs", job_body(), content_type=JSON)
    assert response.status_code == 201


def test_submit_answers_201_with_the_job(owner_client, site):
    response = owner_client.post("/api/v1/jobs", job_body(), content_type=JSON)
    assert response.status_code == 201
    data = response.json()
    job = Job.objects.get()
    assert data["id"] == job.pk
    assert (data["state"], data["state_reason"]) == (
        "quota_wait",
        "Queued; waiting for the scheduler",
    )
    assert data["resources"] == {
        "kind": "gpu",
        "gpu_model": "V100",
        "gpu_count": 1,
        "vgpu_compute_percent": None,
        "vgpu_memory_gib": None,
        "cpu_cores": 12.0,
        "memory_gib": 56.0,
        "storage_gib": 10,
    }
    assert data["datasets"] == ["cats", "dogs"]
    assert (data["image"], data["code_version"], data["priority"]) == ("pytorch", "v1", "normal")
    assert "queue_position" in data and "estimated_start" in data


def test_submit_with_every_field(owner_client, site):
    body = {
        "project": "vision",
        "name": "full",
        "task_mode": "distributed",
        "replicas": 2,
        "config_mode": "parameter",
        "spec": None,
        "resources": {
            "kind": "vgpu",
            "gpu_model": "V100",
            "gpu_count": 2,
            "vgpu_compute_percent": 50,
            "vgpu_memory_gib": 6,
            "cpu_cores": 8,
            "memory_gib": 32,
            "storage_gib": 20,
        },
        "command": "torchrun train.py",
        "datasets": ["dogs", "cats"],
        "pretrained_models": ["resnet50"],
        "code_version": "v1",
        "image": "tensorflow",
        "ports": [8888, 6006],
        "max_runtime_minutes": 600,
        "max_retries": 2,
        "priority": "normal",
    }
    data = owner_client.post("/api/v1/jobs", body, content_type=JSON).json()
    # The answer is the job as stored: what a read of it gives, field for field.
    stored = owner_client.get(f"/api/v1/jobs/{data['id']}").json()
    assert data == {field: stored[field] for field in data}
    assert data["resources"]["vgpu_memory_gib"] == 6.0
    assert (data["replicas"], data["datasets"], data["ports"]) == (
        2,
        ["dogs", "cats"],
        [6006, 8888],
    )
    assert (data["image"], data["max_retries"], data["max_runtime_minutes"]) == (
        "tensorflow",
        2,
        600,
    )


def test_schema_type_error_is_a_422_with_the_field(owner_client, site):
    response = owner_client.post("/api/v1/jobs", job_body(ports=["x"]), content_type=JSON)
    assert response.status_code == 422
    assert list(response.json()["errors"]) == ["ports.0"]


def test_a_misspelt_field_is_refused_not_ignored(owner_client, site):
    body = job_body(resources={"gpu_cont": 2}, nmae="typo")
    response = owner_client.post("/api/v1/jobs", body, content_type=JSON)
    assert response.status_code == 422
    unknown = ["Unknown field: check its spelling against the API's fields."]
    assert response.json()["errors"] == {"resources.gpu_cont": unknown, "nmae": unknown}
    assert not Job.objects.exists()


def test_bearer_token_submits_without_csrf(site, owner):
    _row, token = ApiToken.issue(user=owner)
    client = Client(enforce_csrf_checks=True)
    response = client.post(
        "/api/v1/jobs", job_body(), content_type=JSON, HTTP_AUTHORIZATION=f"Bearer {token}"
    )
    assert response.status_code == 201


def test_list_filters_by_state_and_project(owner_client, owner, site, job):
    JobFactory(owner=owner, project=site.project, name="done", state=Job.State.SUCCEEDED)
    listed = owner_client.get("/api/v1/jobs").json()
    assert listed["count"] == 2
    assert [j["name"] for j in listed["items"]] == ["done", "train"]
    by_state = owner_client.get("/api/v1/jobs", {"state": "quota_wait"}).json()["items"]
    assert [j["name"] for j in by_state] == ["train"]
    assert owner_client.get("/api/v1/jobs", {"project": "nope"}).json()["count"] == 0


def test_list_refuses_an_unknown_state(owner_client, site):
    response = owner_client.get("/api/v1/jobs", {"state": "sleeping"})
    assert response.status_code == 422
    assert "State must be one of" in response.json()["errors"]["state"][0]


def test_list_query_count_does_not_grow(owner_client, owner, site, job):
    def count() -> int:
        with CaptureQueriesContext(connection) as context:
            owner_client.get("/api/v1/jobs")
        return len(context)

    count()  # the factors' decayed usage, kept for a refresh (billing/fair_share.py)
    few = count()
    for i in range(20):
        job_submit(user=owner, data=job_body(name=f"j{i}", ports=[8080 + i]))
    assert count() == few


def test_detail_has_events(owner_client, job):
    data = owner_client.get(f"/api/v1/jobs/{job.pk}").json()
    assert data["events"][0]["to_state"] == "quota_wait"
    assert data["events"][0]["reason"] == "Submitted by owner; waiting for the scheduler"


def test_member_sees_and_outsider_gets_404(client, member, outsider, job):
    client.force_login(member)
    assert client.get(f"/api/v1/jobs/{job.pk}").status_code == 200
    assert client.get("/api/v1/jobs").json()["count"] == 1
    client.force_login(outsider)
    assert client.get(f"/api/v1/jobs/{job.pk}").status_code == 404
    assert client.post(f"/api/v1/jobs/{job.pk}/stop").status_code == 404
    patch = client.patch(f"/api/v1/jobs/{job.pk}", {"ports": [9000]}, content_type=JSON)
    assert patch.status_code == 404
    assert client.get("/api/v1/jobs").json()["count"] == 0
    assert Job.objects.get().state == Job.State.QUOTA_WAIT


def test_stop(owner_client, job):
    data = owner_client.post(f"/api/v1/jobs/{job.pk}/stop").json()
    assert (data["state"], data["state_reason"]) == ("stopped", "Stopped by owner")
    again = owner_client.post(f"/api/v1/jobs/{job.pk}/stop")
    assert again.status_code == 200 and again.json()["state"] == "stopped"


def test_patch_ports(owner_client, job):
    response = owner_client.patch(
        f"/api/v1/jobs/{job.pk}", {"ports": [8080, 6006]}, content_type=JSON
    )
    assert response.status_code == 200
    assert response.json()["ports"] == [6006, 8080]


def test_patch_ports_follows_the_rules(owner_client, job):
    response = owner_client.patch(f"/api/v1/jobs/{job.pk}", {"ports": [70000]}, content_type=JSON)
    assert response.status_code == 422
    assert response.json() == {
        "errors": {"ports": ["Port 70000 is out of range: ports must be between 1025 and 65535"]}
    }


def test_openapi_document_validates_and_has_the_contract(owner_client):
    doc = owner_client.get("/api/v1/openapi.json").json()
    validate(doc)
    paths = doc["paths"]
    for path, method in [
        ("/api/v1/gpu-models", "get"),
        ("/api/v1/specs", "get"),
        ("/api/v1/projects", "get"),
        ("/api/v1/resources/free", "get"),
        ("/api/v1/resources/free/refresh", "post"),
        ("/api/v1/resources/feasibility", "post"),
        ("/api/v1/jobs", "post"),
        ("/api/v1/jobs", "get"),
        ("/api/v1/jobs/{job_id}", "get"),
        ("/api/v1/jobs/{job_id}", "patch"),
        ("/api/v1/jobs/{job_id}/stop", "post"),
    ]:
        assert method in paths[path], (path, method)
