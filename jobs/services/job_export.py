"""A job as the submit body that makes the same job again: export, clone, templates.

``job_submit_body(job)`` returns the ``POST /api/v1/jobs`` body (names, cores,
GiB) with every field explicit, so submitting it gives a job with the same
resources, data, command and limits even after the project's defaults or the
models' ratios change. The CLI's ``export``, the page's "Run again" and
"Save as template" all start from it.
"""

from __future__ import annotations

from decimal import Decimal

from resources.models import ResourceKind
from resources.ratios import mib_to_gib, milli_to_cores

from ..models import Job

PRIORITY_NAMES = {Job.Priority.NORMAL: "normal", Job.Priority.HIGH: "high"}


def job_submit_body(job: Job) -> dict:
    """The submit body of ``job`` (its related rows are read if not prefetched)."""
    body = {
        "project": job.project.name,
        "name": job.name,
        "task_mode": job.task_mode,
        "config_mode": job.config_mode,
    }
    if job.task_mode == Job.TaskMode.DISTRIBUTED:
        body["replicas"] = job.replicas
    if job.config_mode == Job.ConfigMode.SPEC and job.spec_id:
        body["spec"] = job.spec.name
    else:
        body["resources"] = _resources(job)
    if job.template_id:
        body["template"] = job.template.name
    body.update(
        command=job.command,
        augmentation_command=job.augmentation_command,
        datasets=[row.dataset.name for row in job.jobdataset_set.all()],
        pretrained_models=[row.pretrained_model.name for row in job.jobpretrainedmodel_set.all()],
        code_version=job.code_version.name if job.code_version_id else None,
        image=job.image.name if job.image_id else None,
        ports=[port.port for port in job.ports.all()],
        max_runtime_minutes=job.max_runtime_minutes,
        max_retries=job.max_retries,
        priority=PRIORITY_NAMES.get(job.priority, "normal"),
        preemptible=job.preemptible,
        keep_checkpoint=job.keep_checkpoint,
    )
    return body


def _resources(job: Job) -> dict:
    resources: dict = {"kind": job.resource_kind}
    if job.resource_kind != ResourceKind.CPU:
        resources.update(gpu_model=job.gpu_model.name, gpu_count=job.gpu_count)
    if job.resource_kind == ResourceKind.VGPU:
        resources.update(
            vgpu_compute_percent=job.vgpu_compute_percent,
            vgpu_memory_gib=_number(mib_to_gib(job.vgpu_memory_mib)),
        )
    resources.update(
        cpu_cores=_number(milli_to_cores(job.cpu_milli)),
        memory_gib=_number(mib_to_gib(job.memory_mib)),
        storage_gib=job.storage_gib,
    )
    return resources


def _number(value: Decimal) -> int | float:
    """A JSON (and YAML) number: 12, not "12" or 12.0."""
    return int(value) if value == value.to_integral_value() else float(value)
