"""The New job form filled from a submit body: "Run again" and personal templates.

The inverse of ``JobForm.submit_data``: the body's names, cores and GiB become
the form's fields, and a ratio choice stays on "follow the ratio" where the
numbers are what the ratio gives, so the form reads as the user would have
filled it. Submitting the filled form unchanged makes the same job.
"""

from __future__ import annotations

from resources.models import GpuModel, ResourceKind
from resources.ratios import (
    CPU_MEMORY_RATIOS,
    card_share,
    cores_to_milli,
    gib_to_mib,
    ratio_cpu_memory_mib,
    ratio_cpu_milli,
    ratio_memory_mib,
    ratio_vgpu_memory_mib,
)

from ..models import Job
from .job_fields import CUSTOM, RATIO
from .template_choice import NO_TEMPLATE


def form_initial(body: dict, gpu_models: list[GpuModel]) -> dict:
    """Initial values of ``JobForm`` for ``body`` (as ``job_submit_body`` writes it)."""
    template = body.get("template") or NO_TEMPLATE
    initial = {
        "project": body.get("project") or "",
        # The project's data below is the body's own, not the project's defaults.
        "items_project": body.get("project") or "",
        "name": body.get("name") or "",
        "task_mode": body.get("task_mode") or Job.TaskMode.SINGLE,
        "replicas": body.get("replicas") or 2,
        "config_mode": body.get("config_mode") or Job.ConfigMode.PARAMETER,
        "spec": body.get("spec") or "",
        "template": template,
        "filled_template": template,  # keeps the body's command, not the template's
        "augmentation_command": body.get("augmentation_command") or "",
        "command": body.get("command") or "",
        "datasets": list(body.get("datasets") or []),
        "pretrained_models": list(body.get("pretrained_models") or []),
        "code_version": body.get("code_version") or "",
        "image": body.get("image") or "",
        "ports": ", ".join(str(port) for port in body.get("ports") or []),
        "max_retries": body.get("max_retries") or 0,
        "priority": body.get("priority") or "normal",
        "preemptible": body.get("preemptible") is True,
        "keep_checkpoint": body.get("keep_checkpoint") is True,
        **_max_runtime(body.get("max_runtime_minutes")),
    }
    resources = body.get("resources")
    if resources:
        models = {model.name: model for model in gpu_models}
        initial.update(_resources(resources, models.get(resources.get("gpu_model") or "")))
    return initial


def _max_runtime(minutes: int | None) -> dict:
    if not minutes:
        return {"max_runtime": "", "max_runtime_unit": "hours"}
    if minutes % 60 == 0:
        return {"max_runtime": str(minutes // 60), "max_runtime_unit": "hours"}
    return {"max_runtime": str(minutes), "max_runtime_unit": "minutes"}


def _resources(resources: dict, gpu_model: GpuModel | None) -> dict:
    kind = resources.get("kind") or ResourceKind.GPU
    values = {
        "kind": kind,
        "storage_gib": _text(resources.get("storage_gib")),
        "cpu_cores": _text(resources.get("cpu_cores")),
        "memory_gib": _text(resources.get("memory_gib")),
    }
    cpu_milli = _milli(resources.get("cpu_cores"))
    memory_mib = _mib(resources.get("memory_gib"))
    if kind == ResourceKind.CPU:
        ratios = [r for r in CPU_MEMORY_RATIOS if ratio_cpu_memory_mib(cpu_milli, r) == memory_mib]
        values["cpu_memory_ratio"] = str(ratios[0]) if ratios else CUSTOM
        return values
    count = int(resources.get("gpu_count") or 1)
    percent = resources.get("vgpu_compute_percent") if kind == ResourceKind.VGPU else None
    values.update(gpu_model=resources.get("gpu_model") or "", gpu_count=str(count))
    if kind == ResourceKind.VGPU:
        values["vgpu_compute_percent"] = _text(percent)
        values["vgpu_memory_gib"] = _text(resources.get("vgpu_memory_gib"))
        values["vgpu_memory_unlocked"] = (
            gpu_model is None
            or percent is None
            or (_mib(resources.get("vgpu_memory_gib")) != ratio_vgpu_memory_mib(gpu_model, percent))
        )
    share = card_share(gpu_count=count, vgpu_compute_percent=percent)
    follows_ratio = gpu_model is not None and (
        cpu_milli == ratio_cpu_milli(gpu_model, share)
        and memory_mib == ratio_memory_mib(gpu_model, share)
    )
    values["gpu_ratio"] = RATIO if follows_ratio else CUSTOM
    return values


def _text(value) -> str:
    return "" if value is None else str(value)


def _milli(cores) -> int | None:
    return None if cores is None else cores_to_milli(cores)


def _mib(gib) -> int | None:
    return None if gib is None else gib_to_mib(gib)
