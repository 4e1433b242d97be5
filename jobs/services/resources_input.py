"""From a job's resource part (form or API, names and UI units) to a ``ResourceRequest``.

Omitted values take the form's defaults: CPU and memory follow the GPU
model's per-card ratio, a virtual GPU's memory follows its compute %, CPU
memory follows 1:4, storage is 10 GiB. Each rule that fails adds a message
naming the field and the limit.
"""

from __future__ import annotations

from decimal import Decimal, InvalidOperation

from django.contrib.auth.models import AbstractBaseUser
from django.core.exceptions import ValidationError
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from core.lookups import row_named
from jobs.models import Job
from resources.models import (
    DEFAULT_STORAGE_GIB,
    MAX_VGPU_COMPUTE_PERCENT,
    MIN_DISTRIBUTED_REPLICAS,
    MIN_STORAGE_GIB,
    MIN_VGPU_COMPUTE_PERCENT,
    GpuModel,
    ResourceKind,
    SiteSettings,
    Spec,
)
from resources.ratios import (
    CPU_MEMORY_RATIOS,
    DEFAULT_CPU_CORES,
    DEFAULT_CPU_MEMORY_RATIO,
    DEFAULT_VGPU_COMPUTE_PERCENT,
    card_share,
    cores_to_milli,
    gib_to_mib,
    mib_to_gib,
    ratio_cpu_memory_mib,
    ratio_cpu_milli,
    ratio_memory_mib,
    ratio_vgpu_memory_mib,
)
from resources.request import ResourceRequest

# Fields of the resource part; in spec mode their errors belong to the spec.
RESOURCE_FIELDS = (
    "kind",
    "gpu_model",
    "gpu_count",
    "vgpu_compute_percent",
    "vgpu_memory_gib",
    "cpu_cores",
    "memory_gib",
    "storage_gib",
    "cpu_memory_ratio",
)

# How messages name a field (the form's labels say the same).
FIELD_LABELS = {
    "replicas": gettext_lazy("Nodes"),
    "gpu_count": gettext_lazy("GPU count"),
    "vgpu_compute_percent": gettext_lazy("Compute per GPU (%)"),
    "vgpu_memory_gib": gettext_lazy("GPU memory per GPU (GiB)"),
    "cpu_cores": gettext_lazy("CPU cores"),
    "memory_gib": gettext_lazy("Memory (GiB)"),
    "storage_gib": gettext_lazy("Temporary storage (GiB)"),
    "cpu_memory_ratio": gettext_lazy("Memory per core"),
    "max_runtime_minutes": gettext_lazy("Max run time (minutes)"),
    "max_retries": gettext_lazy("Replica retries"),
}


class FieldErrors(dict[str, list[str]]):
    """Messages per field, raised together as one ``ValidationError``."""

    def add(self, field: str, message: str) -> None:
        self.setdefault(field, []).append(str(message))

    def merge(self, errors: dict[str, list[str]], rename: dict[str, str] | None = None) -> None:
        for field, messages in errors.items():
            for message in messages:
                self.add((rename or {}).get(field, field), message)

    def raise_if_any(self) -> None:
        if self:
            raise ValidationError(dict(self))


def job_resources_resolve(*, user: AbstractBaseUser, data: dict) -> ResourceRequest:
    """The per-replica request of ``data``; ``ValidationError`` naming each bad field."""
    errors = FieldErrors()
    request = resources_resolve(user=user, data=data, errors=errors)
    errors.raise_if_any()
    return request


def resources_resolve(
    *, user: AbstractBaseUser, data: dict, errors: FieldErrors
) -> ResourceRequest | None:
    """Like ``job_resources_resolve`` but collects into ``errors``; None when it cannot build."""
    site = SiteSettings.load()
    replicas = _replicas(data, site, errors)
    if (data.get("config_mode") or Job.ConfigMode.PARAMETER) == Job.ConfigMode.SPEC:
        return _from_spec(data, site, replicas, errors)
    if data.get("config_mode") not in (None, "", *Job.ConfigMode.values):
        errors.add("config_mode", _("Config mode must be parameter or spec"))
        return None
    return _from_parameters(data.get("resources") or {}, replicas, errors)


def _replicas(data: dict, site: SiteSettings, errors: FieldErrors) -> int:
    mode = data.get("task_mode") or Job.TaskMode.SINGLE
    given = as_integer(data.get("replicas"), "replicas", errors)
    if mode == Job.TaskMode.SINGLE:
        if given not in (None, 1):
            errors.add(
                "replicas",
                _("A single-machine job has exactly 1 replica; you gave %(n)s") % {"n": given},
            )
        return 1
    if mode != Job.TaskMode.DISTRIBUTED:
        errors.add(
            "task_mode",
            _("Task mode must be single or distributed; you gave %(mode)s") % {"mode": mode},
        )
        return 1
    replicas = MIN_DISTRIBUTED_REPLICAS if given is None else given
    if replicas < MIN_DISTRIBUTED_REPLICAS:
        errors.add(
            "replicas",
            _("A distributed job needs at least %(min)s nodes; you gave %(n)s")
            % {"min": MIN_DISTRIBUTED_REPLICAS, "n": replicas},
        )
    elif replicas > site.max_nodes_per_job:
        errors.add(
            "replicas",
            _("At most %(max)s nodes per job; you gave %(n)s")
            % {"max": site.max_nodes_per_job, "n": replicas},
        )
    return max(replicas, 1)


def _from_spec(
    data: dict, site: SiteSettings, replicas: int, errors: FieldErrors
) -> ResourceRequest | None:
    if not site.spec_management_enabled:
        errors.add(
            "config_mode", _("Spec mode is off: the admin has not turned on spec management")
        )
        return None
    name = data.get("spec")
    if not name:
        errors.add("spec", _("Choose a spec"))
        return None
    spec, missing = row_named(Spec.objects.select_related("gpu_model"), name)
    if spec is None:
        errors.add("spec", missing)
    elif not spec.enabled:
        errors.add("spec", _("The spec %(name)s is disabled; choose another") % {"name": name})
    if spec is None or not spec.enabled:
        return None
    return ResourceRequest.from_columns(spec, kind=spec.kind, replicas=replicas)


def _from_parameters(resources: dict, replicas: int, errors: FieldErrors) -> ResourceRequest | None:
    kind = resources.get("kind") or (
        ResourceKind.GPU if resources.get("gpu_model") else ResourceKind.CPU
    )
    if kind not in ResourceKind.values:
        errors.add(
            "kind", _("Resource kind must be cpu, gpu or vgpu; you gave %(kind)s") % {"kind": kind}
        )
        return None
    if kind == ResourceKind.CPU:
        return _cpu_request(resources, replicas, errors)
    return _gpu_request(resources, kind, replicas, errors)


def _cpu_request(resources: dict, replicas: int, errors: FieldErrors) -> ResourceRequest | None:
    cores = as_decimal(resources.get("cpu_cores"), "cpu_cores", errors)
    cpu_milli = _positive_cpu(DEFAULT_CPU_CORES if cores is None else cores, errors)
    memory_mib = _memory(
        resources, errors, default=lambda: _cpu_ratio_memory(resources, cpu_milli, errors)
    )
    storage = _storage(resources, errors)
    if None in (cpu_milli, memory_mib, storage):
        return None
    return ResourceRequest(
        kind=ResourceKind.CPU,
        cpu_milli=cpu_milli,
        memory_mib=memory_mib,
        storage_gib=storage,
        replicas=replicas,
    )


def _cpu_ratio_memory(resources: dict, cpu_milli: int | None, errors: FieldErrors) -> int | None:
    ratio = as_integer(resources.get("cpu_memory_ratio"), "cpu_memory_ratio", errors)
    ratio = DEFAULT_CPU_MEMORY_RATIO if ratio is None else ratio
    if ratio not in CPU_MEMORY_RATIOS:
        choices = ", ".join(f"1:{r}" for r in CPU_MEMORY_RATIOS)
        errors.add(
            "cpu_memory_ratio",
            _("Memory per core must be one of %(choices)s; you gave 1:%(n)s")
            % {"choices": choices, "n": ratio},
        )
        return None
    return None if cpu_milli is None else ratio_cpu_memory_mib(cpu_milli, ratio)


def _gpu_request(
    resources: dict, kind: str, replicas: int, errors: FieldErrors
) -> ResourceRequest | None:
    gpu_model = _gpu_model(resources.get("gpu_model"), kind, errors)
    count = as_integer(resources.get("gpu_count"), "gpu_count", errors)
    count = 1 if count is None else count
    if count < 1:
        errors.add("gpu_count", _("GPU count must be at least 1; you gave %(n)s") % {"n": count})
    percent, vgpu_memory_mib = None, None
    if kind == ResourceKind.VGPU:
        percent = _vgpu_percent(resources, errors)
        vgpu_memory_mib = _vgpu_memory(resources, gpu_model, percent, errors)
    if gpu_model is None or count < 1:
        return None
    share = card_share(gpu_count=count, vgpu_compute_percent=percent or 100)
    cores = as_decimal(resources.get("cpu_cores"), "cpu_cores", errors)
    cpu_milli = ratio_cpu_milli(gpu_model, share) if cores is None else _positive_cpu(cores, errors)
    memory_mib = _memory(resources, errors, default=lambda: ratio_memory_mib(gpu_model, share))
    storage = _storage(resources, errors)
    if None in (cpu_milli, memory_mib, storage) or (
        kind == ResourceKind.VGPU and not vgpu_memory_mib
    ):
        return None
    return ResourceRequest(
        kind=kind,
        cpu_milli=cpu_milli,
        memory_mib=memory_mib,
        storage_gib=storage,
        gpu_model=gpu_model,
        gpu_count=count,
        vgpu_compute_percent=percent,
        vgpu_memory_mib=vgpu_memory_mib,
        replicas=replicas,
    )


def _gpu_model(name: str | None, kind: str, errors: FieldErrors) -> GpuModel | None:
    if not name:
        errors.add("gpu_model", _("Choose a GPU model for a GPU job"))
        return None
    gpu_model, missing = row_named(GpuModel.objects.prefetch_related("members"), name)
    if gpu_model is None:
        errors.add("gpu_model", missing)
    elif not gpu_model.supports(kind):
        errors.add(
            "gpu_model", _("%(model)s does not support virtual GPUs") % {"model": gpu_model.name}
        )
        return None
    return gpu_model


def _vgpu_percent(resources: dict, errors: FieldErrors) -> int | None:
    percent = as_integer(resources.get("vgpu_compute_percent"), "vgpu_compute_percent", errors)
    percent = DEFAULT_VGPU_COMPUTE_PERCENT if percent is None else percent
    if not MIN_VGPU_COMPUTE_PERCENT <= percent <= MAX_VGPU_COMPUTE_PERCENT:
        errors.add(
            "vgpu_compute_percent",
            _("Compute per GPU must be between %(min)s and %(max)s%%; you gave %(n)s%%")
            % {"min": MIN_VGPU_COMPUTE_PERCENT, "max": MAX_VGPU_COMPUTE_PERCENT, "n": percent},
        )
        return None
    return percent


def _vgpu_memory(
    resources: dict, gpu_model: GpuModel | None, percent: int | None, errors: FieldErrors
) -> int | None:
    gib = as_decimal(resources.get("vgpu_memory_gib"), "vgpu_memory_gib", errors)
    if gpu_model is None or percent is None:
        return None
    if gib is None:
        return ratio_vgpu_memory_mib(gpu_model, percent)
    mib = gib_to_mib(gib)
    if mib <= 0:
        errors.add(
            "vgpu_memory_gib",
            _("GPU memory per GPU must be more than 0 GiB; you gave %(n)s") % {"n": gib},
        )
        return None
    if mib > gpu_model.card_memory_mib:
        errors.add(
            "vgpu_memory_gib",
            _("GPU memory per GPU is at most the card's %(card)s GiB; you gave %(n)s GiB")
            % {"card": gpu_model.card_memory_gib, "n": mib_to_gib(mib)},
        )
        return None
    return mib


def _positive_cpu(cores: Decimal, errors: FieldErrors) -> int | None:
    milli = cores_to_milli(cores)
    if milli <= 0:
        errors.add("cpu_cores", _("CPU cores must be more than 0; you gave %(n)s") % {"n": cores})
        return None
    return milli


def _memory(resources: dict, errors: FieldErrors, default) -> int | None:
    gib = as_decimal(resources.get("memory_gib"), "memory_gib", errors)
    if gib is None:
        return default()
    mib = gib_to_mib(gib)
    if mib <= 0:
        errors.add("memory_gib", _("Memory must be more than 0 GiB; you gave %(n)s") % {"n": gib})
        return None
    return mib


def _storage(resources: dict, errors: FieldErrors) -> int | None:
    storage = as_integer(resources.get("storage_gib"), "storage_gib", errors)
    storage = DEFAULT_STORAGE_GIB if storage is None else storage
    if storage < MIN_STORAGE_GIB:
        errors.add(
            "storage_gib",
            _("Temporary storage must be at least %(min)s GiB; you gave %(n)s GiB")
            % {"min": MIN_STORAGE_GIB, "n": storage},
        )
        return None
    return storage


def as_integer(value, field: str, errors: FieldErrors) -> int | None:
    """``value`` as a whole number; None when blank or (with an error) when not whole."""
    if value is None or value == "":
        return None
    number = _finite(value)
    if number is not None and number == number.to_integral_value():
        return int(number)
    errors.add(
        field,
        _("%(field)s must be a whole number; you gave %(value)s") % _named(field, value),
    )
    return None


def as_decimal(value, field: str, errors: FieldErrors) -> Decimal | None:
    """``value`` as a number; None when blank or (with an error) when not a number."""
    if value is None or value == "":
        return None
    number = _finite(value)
    if number is None:
        errors.add(
            field, _("%(field)s must be a number; you gave %(value)s") % _named(field, value)
        )
    return number


def _finite(value) -> Decimal | None:
    try:
        number = Decimal(str(value).strip())
    except InvalidOperation:
        return None
    return number if number.is_finite() else None


def _named(field: str, value) -> dict:
    return {"field": FIELD_LABELS.get(field, field), "value": value}
