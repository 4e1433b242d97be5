"""How the jobs list reads a job's request and figures in a few words."""

from decimal import Decimal

from django import template
from django.utils.translation import gettext as _
from django.utils.translation import ngettext

from resources.ratios import milli_to_cores

register = template.Library()


@register.filter
def resources_short(job) -> str:
    """The request in a few words: "1 × P4", "2 × V100 · 3 replicas", "1 CPU core"."""
    if job.gpu_model_id is None:
        cores = milli_to_cores(job.cpu_milli)
        count = int(cores) if cores == int(cores) else 2  # 1.5 cores reads as a plural
        text = ngettext("%(n)s CPU core", "%(n)s CPU cores", count) % {"n": cores}
    elif job.resource_kind == "vgpu":
        text = _("%(count)s × %(model)s vGPU %(percent)s %%") % {
            "count": job.gpu_count,
            "model": job.gpu_model.name,
            "percent": job.vgpu_compute_percent,
        }
    else:
        text = f"{job.gpu_count} × {job.gpu_model.name}"
    if job.replicas > 1:
        text += " · " + ngettext("%(n)s replica", "%(n)s replicas", job.replicas) % {
            "n": job.replicas
        }
    return text


@register.filter
def seconds(duration) -> float | None:
    """A ``timedelta`` as seconds (None stays None) for the ``duration`` filter."""
    return None if duration is None else max(duration.total_seconds(), 0)


@register.filter
def hours(value: Decimal | None) -> str:
    return "—" if value is None else f"{Decimal(value):.2f}"
