"""A small site for the job form, API and feasibility tests: models, nodes, a project.

Seed 000's models: V100 (16 GiB card, 12 cores + 56 GiB per card, vGPU), P4
(8 GiB, free tier), and V100-32G; ``*V100`` aggregates the two V100s.
"""

from __future__ import annotations

from dataclasses import dataclass

from billing.accounts import account_for_user
from jobs.models import Project
from resources.models import GpuModel
from tests.factories import (
    CodeVersionFactory,
    DatasetFactory,
    GpuModelFactory,
    ImageFactory,
    NodeFactory,
    PretrainedModelFactory,
    ProjectFactory,
    UserFactory,
)

GIB = 1024


@dataclass
class Site:
    v100: GpuModel
    v100_32g: GpuModel
    p4: GpuModel
    star_v100: GpuModel
    project: Project
    other_project: Project


def build_site(*, project: Project, billing_for=()) -> Site:
    """Nodes: two 8×V100, one 4×V100-32G, one 1×P4, one CPU-only; data for ``project``."""
    v100 = GpuModelFactory(name="V100")
    v100_32g = GpuModelFactory(name="V100-32G", card_memory_gib=32)
    p4 = GpuModelFactory(
        name="P4", card_memory_gib=8, memory_gib_per_card=40, supports_vgpu=False, free_tier=True
    )
    star_v100 = GpuModelFactory(name="*V100")
    star_v100.members.set([v100, v100_32g])
    for name in ("v100-a", "v100-b"):
        NodeFactory(name=name, gpu_model=v100, gpu_count=8, cpu_milli=96_000, memory_mib=448 * GIB)
    NodeFactory(
        name="v100x-a", gpu_model=v100_32g, gpu_count=4, cpu_milli=48_000, memory_mib=224 * GIB
    )
    NodeFactory(name="p4-a", gpu_model=p4, gpu_count=1, cpu_milli=12_000, memory_mib=40 * GIB)
    NodeFactory(name="cpu-a", gpu_model=None, gpu_count=0, cpu_milli=32_000, memory_mib=128 * GIB)
    DatasetFactory(project=project, name="cats")
    DatasetFactory(project=project, name="dogs")
    PretrainedModelFactory(project=project, name="resnet50")
    CodeVersionFactory(project=project, name="v1")
    ImageFactory(project=project, name="pytorch", is_default=True)
    ImageFactory(project=project, name="tensorflow")
    other = ProjectFactory(name="secret-project", owner=UserFactory(username="stranger"))
    DatasetFactory(project=other, name="secret-data")
    CodeVersionFactory(project=other, name="secret-code")
    for user in billing_for:
        account = account_for_user(user=user)
        account.billing_enabled = True
        account.save(update_fields=["billing_enabled"])
    return Site(v100, v100_32g, p4, star_v100, project, other)


def job_body(**overrides) -> dict:
    """A valid ``POST /api/v1/jobs`` body for the ``vision`` project: 1 × V100."""
    body = {
        "project": "vision",
        "name": "train",
        "resources": {"kind": "gpu", "gpu_model": "V100", "gpu_count": 1},
        "command": "python train.py",
    }
    resources = overrides.pop("resources", None)
    body.update(overrides)
    if resources is not None:
        body["resources"] = {**body["resources"], **resources}
    return body


def form_post(**overrides) -> dict:
    """A valid POST of the New job form for the same job."""
    data = {
        "project": "vision",
        "items_project": "vision",
        "name": "train",
        "task_mode": "single",
        "config_mode": "parameter",
        "kind": "gpu",
        "gpu_model": "V100",
        "gpu_count": "1",
        "gpu_ratio": "ratio",
        "cpu_memory_ratio": "4",
        "storage_gib": "10",
        "vgpu_compute_percent": "50",
        "command": "python train.py",
        "datasets": ["cats", "dogs"],
        "pretrained_models": ["resnet50"],
        "code_version": "v1",
        "image": "pytorch",
        "ports": "",
        "max_runtime": "",
        "max_runtime_unit": "hours",
        "max_retries": "0",
        "priority": "normal",
        "_action": "submit",
    }
    data.update(overrides)
    return data
