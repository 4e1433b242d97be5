"""A request in words and UI units, for pages: "2 × V100, 24 CPU cores, 112 GiB memory"."""

from __future__ import annotations

from django.utils.translation import gettext as _

from .ratios import mib_to_gib, milli_to_cores
from .request import ResourceRequest


def describe_request(request: ResourceRequest) -> str:
    """One replica's request."""
    parts = []
    if request.is_vgpu:
        parts.append(
            _("%(count)s × %(model)s virtual GPU (%(percent)s%% compute, %(memory)s GiB each)")
            % {
                "count": request.gpu_count,
                "model": request.gpu_model.name,
                "percent": request.vgpu_compute_percent,
                "memory": mib_to_gib(request.vgpu_memory_mib),
            }
        )
    elif request.gpu_model is not None:
        parts.append(f"{request.gpu_count} × {request.gpu_model.name}")
    parts.append(_("%(n)s CPU cores") % {"n": milli_to_cores(request.cpu_milli)})
    parts.append(_("%(n)s GiB memory") % {"n": mib_to_gib(request.memory_mib)})
    parts.append(_("%(n)s GiB temporary storage") % {"n": request.storage_gib})
    return ", ".join(parts)
