"""Could this request ever run? Checked against node capacity and the user's whole quota.

A request is feasible when enough distinct ready nodes each have a *capacity*
(not free amount) of at least one replica's request in every resource, and
when the whole job fits inside the user's quota. What is free right now does
not matter: a feasible job waits in a queue, an infeasible one never starts.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from django.contrib.auth.models import AbstractBaseUser
from django.db.models import Count, F, Max, Q, QuerySet
from django.utils.translation import gettext as _
from django.utils.translation import gettext_noop

from .catalog import ModelCatalog
from .models import MIB_PER_GIB, GpuModel, Node
from .quota import borrow_limits_for, quota_limits
from .ratios import mib_to_gib, milli_to_cores
from .request import ResourceRequest
from .vector import CPU, MEMORY

NON_FIELD = "__all__"


@dataclass(frozen=True)
class Feasibility:
    """The answer, with each reason also keyed by the request field it concerns."""

    errors: dict[str, list[str]] = field(default_factory=dict)

    @property
    def feasible(self) -> bool:
        return not self.errors

    @property
    def reasons(self) -> list[str]:
        return [message for messages in self.errors.values() for message in messages]


def request_feasibility(
    *, request: ResourceRequest, user: AbstractBaseUser | None = None, preemptible: bool = False
) -> Feasibility:
    """Check ``request`` against every ready node and, given a user, their quota (for a
    preemptible job, their quota and what they may borrow beyond it)."""
    errors: dict[str, list[str]] = {}
    quota_errors = _quota_errors(request, user, preemptible)
    for key, message in _capacity_errors(request) + quota_errors:
        errors.setdefault(key, []).append(message)
    return Feasibility(errors)


def member_model_ids(gpu_model: GpuModel) -> list[int]:
    """The physical models a request for ``gpu_model`` may be placed on."""
    if gpu_model.is_aggregated:
        return list(gpu_model.members.values_list("pk", flat=True))
    return [gpu_model.pk]


def _candidates(request: ResourceRequest) -> QuerySet[Node]:
    nodes = Node.objects.filter(state=Node.State.READY).annotate(
        card_memory_mib=F("gpu_model__card_memory_gib") * MIB_PER_GIB
    )
    if request.gpu_model is not None:
        nodes = nodes.filter(gpu_model__in=member_model_ids(request.gpu_model))
    if request.is_vgpu:
        nodes = nodes.filter(gpu_model__supports_vgpu=True)
    return nodes


def _fits_one_replica(request: ResourceRequest) -> Q:
    fits = Q(
        cpu_milli__gte=request.cpu_milli,
        memory_mib__gte=request.memory_mib,
        storage_gib__gte=request.storage_gib,
    )
    if request.gpu_model is not None:
        fits &= Q(gpu_count__gte=request.gpu_count)
    if request.is_vgpu:
        fits &= Q(card_memory_mib__gte=request.vgpu_memory_mib)
    return fits


def _capacity_errors(request: ResourceRequest) -> list[tuple[str, str]]:
    """Each resource that no candidate node has enough of, else why too few nodes fit."""
    stats = _candidates(request).aggregate(
        nodes=Count("pk"),
        fitting=Count("pk", filter=_fits_one_replica(request)),
        max_cards=Max("gpu_count"),
        max_card_memory_mib=Max("card_memory_mib"),
        max_cpu_milli=Max("cpu_milli"),
        max_memory_mib=Max("memory_mib"),
        max_storage_gib=Max("storage_gib"),
    )
    if not stats["nodes"]:
        return [_no_ready_node(request)]
    errors = _largest_errors(request, stats)
    if errors:
        return errors
    if stats["fitting"] == 0:
        return [(NON_FIELD, _("no single node has all of this request at once"))]
    if stats["fitting"] < request.replicas:
        message = _(
            "only %(fitting)s nodes can hold one replica each, but %(replicas)s replicas "
            "need %(replicas)s distinct nodes"
        ) % {"fitting": stats["fitting"], "replicas": request.replicas}
        return [("replicas", message)]
    return []


def _no_ready_node(request: ResourceRequest) -> tuple[str, str]:
    if request.gpu_model is None:
        return ("cpu_cores", _("no node is ready"))
    if request.is_vgpu:
        message = _("no ready node has %(model)s cards that support virtual GPUs")
    else:
        message = _("no ready node has %(model)s cards")
    return ("gpu_model", message % {"model": request.gpu_model.name})


def _largest_errors(request: ResourceRequest, stats: dict) -> list[tuple[str, str]]:
    model = request.gpu_model.name if request.gpu_model is not None else None
    errors = []
    if model and request.gpu_count > stats["max_cards"]:
        message = _("no node has %(n)s %(model)s cards (largest: %(largest)s)")
        values = {"n": request.gpu_count, "model": model, "largest": stats["max_cards"]}
        errors.append(("gpu_count", message % values))
    if request.is_vgpu and request.vgpu_memory_mib > stats["max_card_memory_mib"]:
        message = _("no %(model)s card has %(n)s GiB of GPU memory (largest: %(largest)s GiB)")
        values = {
            "n": mib_to_gib(request.vgpu_memory_mib),
            "model": model,
            "largest": mib_to_gib(stats["max_card_memory_mib"]),
        }
        errors.append(("vgpu_memory_gib", message % values))
    checks = [
        ("cpu_cores", request.cpu_milli, stats["max_cpu_milli"], milli_to_cores, CPU_MESSAGES),
        ("memory_gib", request.memory_mib, stats["max_memory_mib"], mib_to_gib, MEMORY_MESSAGES),
        ("storage_gib", request.storage_gib, stats["max_storage_gib"], int, STORAGE_MESSAGES),
    ]
    for field_name, wanted, largest, shown, (plain, on_model) in checks:
        if wanted > largest:
            values = {"n": shown(wanted), "largest": shown(largest), "model": model}
            errors.append((field_name, (_(on_model) if model else _(plain)) % values))
    return errors


# (for a CPU request, for a GPU request); translated where used.
CPU_MESSAGES = (
    gettext_noop("no node has %(n)s CPU cores (largest: %(largest)s)"),
    gettext_noop("no node with %(model)s cards has %(n)s CPU cores (largest: %(largest)s)"),
)
MEMORY_MESSAGES = (
    gettext_noop("no node has %(n)s GiB of memory (largest: %(largest)s GiB)"),
    gettext_noop("no node with %(model)s cards has %(n)s GiB of memory (largest: %(largest)s GiB)"),
)
STORAGE_MESSAGES = (
    gettext_noop("no node has %(n)s GiB of temporary storage (largest: %(largest)s GiB)"),
    gettext_noop(
        "no node with %(model)s cards has %(n)s GiB of temporary storage (largest: %(largest)s GiB)"
    ),
)


def _quota_errors(
    request: ResourceRequest, user: AbstractBaseUser | None, preemptible: bool
) -> list[tuple[str, str]]:
    """A job larger than the user's whole quota could never be admitted; a preemptible one
    runs borrowing when beyond it, up to the borrow limits (a key without one has no cap)."""
    if user is None:
        return []
    limits = quota_limits(user=user)
    if preemptible:
        borrow = borrow_limits_for(user_ids=[user.pk])[user.pk]
        limits = {key: max(limit, borrow[key]) for key, limit in limits.items() if key in borrow}
    need = request.quota_vector()
    model = request.gpu_model
    catalog = ModelCatalog.load() if model is not None else None
    if model is not None and not model.is_aggregated:
        # Cards held on a model also count against every aggregated model containing it.
        need = catalog.charge(need, requested=model.name, physical=model.name)
    errors = [_quota_error(key, need[key], limits[key]) for key in need.exceeded_limits(limits)]
    if model is not None and model.is_aggregated:
        errors += _member_quota_errors(request, limits, catalog)
    return errors


def _member_quota_errors(
    request: ResourceRequest, limits: dict[str, int], catalog: ModelCatalog
) -> list[tuple[str, str]]:
    """Each replica of an aggregated request is charged to the member it lands on."""
    name = request.gpu_model.name
    one = replace(request, replicas=1).quota_vector()
    members = catalog.physical_models(name)
    fit = 0
    for member in members:
        charged = catalog.charge(one, requested=name, physical=member)
        own = {k: v for k, v in charged.items() if k.endswith(f":{member}") and k in limits}
        fit += min((limits[k] // v for k, v in own.items()), default=request.replicas)
    if fit >= request.replicas:
        return []
    message = _(
        "your quotas of the models in %(model)s (%(members)s) hold %(fit)s of the job's "
        "%(replicas)s replicas"
    )
    values = {
        "model": name,
        "members": ", ".join(members),
        "fit": fit,
        "replicas": request.replicas,
    }
    field_name = "vgpu_compute_percent" if request.is_vgpu else "gpu_count"
    return [(field_name, message % values)]


def _quota_error(key: str, need: int, limit: int) -> tuple[str, str]:
    if key == CPU:
        message = _("the job needs %(need)s CPU cores in total; your whole quota is %(limit)s")
        return (
            "cpu_cores",
            message % {"need": milli_to_cores(need), "limit": milli_to_cores(limit)},
        )
    if key == MEMORY:
        message = _(
            "the job needs %(need)s GiB of memory in total; your whole quota is %(limit)s GiB"
        )
        return ("memory_gib", message % {"need": mib_to_gib(need), "limit": mib_to_gib(limit)})
    kind, model = key.split(":", 1)
    if kind == "gpu":
        message = _(
            "the job needs %(need)s %(model)s cards in total; your whole quota is %(limit)s"
        )
        return ("gpu_count", message % {"need": need, "model": model, "limit": limit})
    message = _(
        "the job needs %(need)s%% of %(model)s compute in total; your whole quota is %(limit)s%%"
    )
    return ("vgpu_compute_percent", message % {"need": need, "model": model, "limit": limit})
