"""Export: a job as the submit body that makes the same job again."""

import pytest

from jobs.models import Job
from jobs.services.job_export import job_submit_body
from jobs.services.submit import job_submit
from resources.models import SiteSettings
from tests.factories import SpecFactory
from tests.job_site import build_site, job_body

pytestmark = pytest.mark.django_db
JSON = "application/json"
# What makes two jobs the same job (ids, owners' clocks and states aside).
SAME = [
    "project_id",
    "name",
    "task_mode",
    "replicas",
    "config_mode",
    "spec_id",
    "template_id",
    "resource_kind",
    "gpu_model_id",
    "gpu_count",
    "vgpu_compute_percent",
    "vgpu_memory_mib",
    "cpu_milli",
    "memory_mib",
    "storage_gib",
    "command",
    "augmentation_command",
    "code_version_id",
    "image_id",
    "max_runtime_minutes",
    "max_retries",
    "priority",
    "preemptible",
    "keep_checkpoint",
]


@pytest.fixture
def site(project, owner):
    return build_site(project=project, billing_for=[owner])


def same_job(a: Job, b: Job) -> dict:
    """Where ``a`` and ``b`` differ (empty when they are the same job)."""
    differ = {f: (getattr(a, f), getattr(b, f)) for f in SAME if getattr(a, f) != getattr(b, f)}
    for related, field in [
        ("jobdataset_set", "dataset_id"),
        ("jobpretrainedmodel_set", "pretrained_model_id"),
        ("ports", "port"),
    ]:
        left, right = (list(getattr(job, related).values_list(field, flat=True)) for job in (a, b))
        if left != right:
            differ[related] = (left, right)
    return differ


@pytest.mark.parametrize(
    "overrides",
    [
        {},
        {
            "resources": {"kind": "vgpu", "gpu_count": 2, "vgpu_compute_percent": 30},
            "datasets": ["dogs"],
            "pretrained_models": [],
            "ports": [8080, 6006],
            "max_runtime_minutes": 95,
            "max_retries": 2,
            "code_version": None,
            "preemptible": True,
            "keep_checkpoint": True,
        },
        {
            "task_mode": "distributed",
            "replicas": 2,
            "resources": {"kind": "gpu", "gpu_count": 2, "cpu_cores": 7.5, "memory_gib": 30.5},
            "image": None,
        },
        {"resources": {"kind": "cpu", "gpu_model": None, "cpu_cores": 3, "cpu_memory_ratio": 8}},
    ],
    ids=["gpu", "vgpu", "distributed", "cpu"],
)
def test_submitting_the_export_makes_the_same_job(owner_client, site, owner, overrides):
    first = job_submit(user=owner, data=job_body(**overrides))
    response = owner_client.get(f"/api/v1/jobs/{first.pk}/export")
    assert response.status_code == 200
    body = response.json()
    assert body == job_submit_body(first)
    again = owner_client.post("/api/v1/jobs", body, content_type=JSON)
    assert again.status_code == 201, again.json()
    assert same_job(first, Job.objects.get(pk=again.json()["id"])) == {}


def test_a_spec_job_exports_its_spec_not_its_numbers(owner, site):
    SiteSettings.objects.filter(pk=SiteSettings.load().pk).update(spec_management_enabled=True)
    SpecFactory(name="small", kind="gpu", gpu_model=site.v100, gpu_count=1)
    data = job_body(config_mode="spec", spec="small")
    del data["resources"]
    job = job_submit(user=owner, data=data)
    body = job_submit_body(job)
    assert (body["config_mode"], body["spec"]) == ("spec", "small")
    assert "resources" not in body


def test_an_outsider_cannot_export(client, outsider, site, owner):
    job = job_submit(user=owner, data=job_body())
    client.force_login(outsider)
    assert client.get(f"/api/v1/jobs/{job.pk}/export").status_code == 404
