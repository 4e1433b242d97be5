"""Every submit rule, once through the API and once through the New job form.

Both go through ``job_submit``; each case checks the field the message is
attached to, that the message names the limit, and that no job was created.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest
from django.urls import reverse
from django.utils.html import escape

from jobs.models import Job
from resources.models import Quota, SiteSettings
from tests.factories import QuotaFactory, SpecFactory
from tests.job_site import Site, build_site, form_post, job_body

pytestmark = pytest.mark.django_db


@dataclass(frozen=True)
class Rule:
    name: str
    field: str
    message: str
    api: dict = field(default_factory=dict)
    form: dict | None = field(default_factory=dict)  # None: the form cannot send this
    billing: bool = True
    setup: str = ""


def _enable_specs(site: Site) -> None:
    SiteSettings.objects.filter(pk=1).update(spec_management_enabled=True)
    SpecFactory(name="big-v100", gpu_model=site.v100, enabled=False)


def _v100_quota_of_4(site: Site) -> None:
    QuotaFactory(user=site.project.owner, gpu_model=site.v100, resource=Quota.Resource.GPU, limit=4)


SETUPS = {"specs": _enable_specs, "quota": _v100_quota_of_4}
VGPU = {"kind": "vgpu", "gpu_model": "V100"}
RULES = [
    Rule("name_required", "name", "Give the job a name", {"name": ""}, {"name": ""}),
    Rule(
        "command_too_long",
        "command",
        "at most 10,000 characters; yours has 10,001",
        {"command": "x" * 10_001},
        {"command": "x" * 10_001},
    ),
    Rule(
        "command_required", "command", "Enter a startup command", {"command": ""}, {"command": " "}
    ),
    Rule(
        "port_out_of_range",
        "ports",
        "Port 80 is out of range: ports must be between 1025 and 65535",
        {"ports": [80]},
        {"ports": "80"},
    ),
    Rule(
        "duplicate_port",
        "ports",
        "Port 8080 is listed twice",
        {"ports": [8080, 8080]},
        {"ports": "8080, 8080"},
    ),
    Rule(
        "too_many_ports",
        "ports",
        "At most 10 ports per job; you gave 11",
        {"ports": list(range(2000, 2011))},
        {"ports": ",".join(str(p) for p in range(2000, 2011))},
    ),
    Rule("port_not_a_number", "ports", "Port abc is not a whole number", {}, {"ports": "abc"}),
    Rule(
        "compute_percent_above_100",
        "vgpu_compute_percent",
        "Compute per GPU must be between 1 and 100%; you gave 150%",
        {"resources": {**VGPU, "vgpu_compute_percent": 150}},
        {"kind": "vgpu", "vgpu_compute_percent": "150"},
    ),
    Rule(
        "compute_percent_zero",
        "vgpu_compute_percent",
        "Compute per GPU must be between 1 and 100%; you gave 0%",
        {"resources": {**VGPU, "vgpu_compute_percent": 0}},
        {"kind": "vgpu", "vgpu_compute_percent": "0"},
    ),
    Rule(
        "vgpu_memory_above_card",
        "vgpu_memory_gib",
        "GPU memory per GPU is at most the card's 16 GiB; you gave 20 GiB",
        {"resources": {**VGPU, "vgpu_compute_percent": 50, "vgpu_memory_gib": 20}},
        {"kind": "vgpu", "vgpu_memory_unlocked": "on", "vgpu_memory_gib": "20"},
    ),
    Rule(
        "vgpu_on_model_without_vgpu",
        "gpu_model",
        "P4 does not support virtual GPUs",
        {"resources": {"kind": "vgpu", "gpu_model": "P4"}},
        {"kind": "vgpu", "gpu_model": "P4"},
    ),
    Rule(
        "storage_below_2_gib",
        "storage_gib",
        "Temporary storage must be at least 2 GiB; you gave 1 GiB",
        {"resources": {"storage_gib": 1}},
        {"storage_gib": "1"},
    ),
    Rule(
        "gpu_count_zero",
        "gpu_count",
        "GPU count must be at least 1; you gave 0",
        {"resources": {"gpu_count": 0}},
        {"gpu_count": "0"},
    ),
    Rule(
        "cpu_cores_not_a_number",
        "cpu_cores",
        "CPU cores must be a number; you gave many",
        {},
        {"kind": "cpu", "cpu_cores": "many"},
    ),
    Rule(
        "custom_cpu_cores_zero",
        "cpu_cores",
        "CPU cores must be more than 0; you gave 0",
        {"resources": {"cpu_cores": 0}},
        {"gpu_ratio": "custom", "cpu_cores": "0", "memory_gib": "8"},
    ),
    Rule(
        "custom_memory_zero",
        "memory_gib",
        "Memory must be more than 0 GiB; you gave 0",
        {"resources": {"kind": "cpu", "gpu_model": None, "cpu_cores": 2, "memory_gib": 0}},
        {"kind": "cpu", "cpu_cores": "2", "cpu_memory_ratio": "custom", "memory_gib": "0"},
    ),
    Rule(
        "unknown_gpu_model",
        "gpu_model",
        "There is no GPU model named A100",
        {"resources": {"gpu_model": "A100"}},
        {"gpu_model": "A100"},
    ),
    Rule(
        "more_replicas_than_max_nodes",
        "replicas",
        "At most 6 nodes per job; you gave 7",
        {"task_mode": "distributed", "replicas": 7},
        {"task_mode": "distributed", "replicas": "7"},
    ),
    Rule(
        "distributed_needs_two_nodes",
        "replicas",
        "A distributed job needs at least 2 nodes; you gave 1",
        {"task_mode": "distributed", "replicas": 1},
        {"task_mode": "distributed", "replicas": "1"},
    ),
    Rule(
        "single_has_one_replica",
        "replicas",
        "A single-machine job has exactly 1 replica; you gave 3",
        {"replicas": 3},
        None,
    ),
    Rule(
        "model_not_allowed_without_billing",
        "gpu_model",
        "may use only the free-tier GPU models (P4), not V100",
        billing=False,
    ),
    Rule(
        "spec_mode_off",
        "config_mode",
        "Spec mode is off",
        {"config_mode": "spec", "spec": "anything"},
        None,
    ),
    Rule(
        "disabled_spec",
        "spec",
        "The spec big-v100 is disabled; choose another",
        {"config_mode": "spec", "spec": "big-v100"},
        {"config_mode": "spec", "spec": "big-v100"},
        setup="specs",
    ),
    Rule(
        "dataset_of_another_project",
        "datasets",
        "Dataset secret-data is not in project vision",
        {"datasets": ["cats", "secret-data"]},
        {"datasets": ["cats", "secret-data"]},
    ),
    Rule(
        "code_version_of_another_project",
        "code_version",
        "Code version secret-code is not in project vision",
        {"code_version": "secret-code"},
        {"code_version": "secret-code"},
    ),
    Rule(
        "project_not_a_member",
        "project",
        "You are not a member of a project named secret-project",
        {"project": "secret-project"},
        {"project": "secret-project", "items_project": "secret-project"},
    ),
    Rule(
        "retries_above_10",
        "max_retries",
        "Replica retries must be between 0 and 10; you gave 11",
        {"max_retries": 11},
        {"max_retries": "11"},
    ),
    Rule(
        "max_runtime_zero",
        "max_runtime_minutes",
        "Max run time must be between 1 and 525,600 minutes",
        {"max_runtime_minutes": 0},
        {"max_runtime": "0", "max_runtime_unit": "minutes"},
    ),
    Rule(
        "high_priority_for_staff_only",
        "priority",
        "Only staff may submit high-priority jobs",
        {"priority": "high"},
        {"priority": "high"},
    ),
    Rule(
        "no_node_big_enough",
        "gpu_count",
        "Cannot run: no node has 16 V100 cards (largest: 8)",
        {"resources": {"gpu_count": 16}},
        {"gpu_count": "16"},
    ),
    Rule(
        "more_than_whole_quota",
        "gpu_count",
        "the job needs 8 V100 cards in total; your whole quota is 4",
        {"task_mode": "distributed", "replicas": 2, "resources": {"gpu_count": 4}},
        {"task_mode": "distributed", "replicas": "2", "gpu_count": "4"},
        setup="quota",
    ),
]
API_RULES = [r for r in RULES if r.api or r.name == "model_not_allowed_without_billing"]
FORM_RULES = [r for r in RULES if r.form is not None]


def _site(rule: Rule, project, owner) -> Site:
    site = build_site(project=project, billing_for=[owner] if rule.billing else [])
    if rule.setup:
        SETUPS[rule.setup](site)
    return site


@pytest.mark.parametrize("rule", API_RULES, ids=lambda r: r.name)
def test_api_refuses(rule: Rule, owner_client, owner, project):
    _site(rule, project, owner)
    response = owner_client.post(
        "/api/v1/jobs", job_body(**rule.api), content_type="application/json"
    )
    assert response.status_code == 422, response.content
    messages = response.json()["errors"][rule.field]
    assert any(rule.message in m for m in messages), messages
    assert not Job.objects.exists()


@pytest.mark.parametrize("rule", FORM_RULES, ids=lambda r: r.name)
def test_form_refuses(rule: Rule, owner_client, owner, project):
    _site(rule, project, owner)
    response = owner_client.post(reverse("jobs:new"), form_post(**rule.form))
    assert response.status_code == 200
    form = response.context["form"]
    form_field = {"max_runtime_minutes": "max_runtime"}.get(rule.field, rule.field)
    messages = form.errors[form_field]
    assert any(rule.message in m for m in messages), form.errors
    assert escape(rule.message.split(";")[0]) in response.content.decode()
    assert not Job.objects.exists()
