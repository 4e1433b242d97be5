"""Ratios that fill in a request from its main choice, and the unit conversions of the UI.

Pages and the API speak cores and GiB; the database keeps millicores and MiB.
Every default a user does not override comes from here (storage's from
``models.limits``), so the form's live values, the API's omitted fields and the
submit service agree.
"""

from __future__ import annotations

from decimal import ROUND_HALF_UP, Context, Decimal

from .models import MIB_PER_GIB, MILLI_PER_CORE, GpuModel

CPU_MEMORY_RATIOS = (2, 4, 8)  # GiB of memory per core (1:2, 1:4, 1:8)
DEFAULT_CPU_MEMORY_RATIO = 4
DEFAULT_CPU_CORES = 4
DEFAULT_VGPU_COMPUTE_PERCENT = 50


def cores_to_milli(cores: Decimal | int | float) -> int:
    return int((Decimal(str(cores)) * MILLI_PER_CORE).to_integral_value(ROUND_HALF_UP))


def gib_to_mib(gib: Decimal | int | float) -> int:
    return int((Decimal(str(gib)) * MIB_PER_GIB).to_integral_value(ROUND_HALF_UP))


def milli_to_cores(milli: int) -> Decimal:
    return _tidy(Decimal(milli) / MILLI_PER_CORE)


def mib_to_gib(mib: int) -> Decimal:
    """GiB with at most three decimals, as the UI shows them."""
    gib = Decimal(mib) / MIB_PER_GIB
    return _tidy(gib.quantize(Decimal("0.001"), ROUND_HALF_UP, context=_digits_for(gib, 3)))


def _tidy(number: Decimal) -> Decimal:
    """Without trailing zeros, and never in exponent form (100, not 1E+2)."""
    number = number.normalize()
    if number.as_tuple().exponent <= 0:
        return number
    return number.quantize(Decimal(1), context=_digits_for(number, 0))


def _digits_for(number: Decimal, decimals: int) -> Context:
    """Enough precision to write ``number`` out with ``decimals`` places, however large.

    A request far beyond any node (10^30 cores) is refused by name, so it must be shown.
    """
    return Context(prec=max(28, number.adjusted() + 1 + decimals))


def card_share(*, gpu_count: int, vgpu_compute_percent: int | None) -> Decimal:
    """How many whole cards' worth a request is: virtual GPUs count by their compute %."""
    if vgpu_compute_percent is None:
        return Decimal(gpu_count)
    return Decimal(gpu_count) * vgpu_compute_percent / 100


def ratio_cpu_milli(gpu_model: GpuModel, share: Decimal) -> int:
    """CPU that follows the model's per-card ratio (seed 000: 12 cores per card)."""
    return cores_to_milli(gpu_model.cpu_cores_per_card * share)


def ratio_memory_mib(gpu_model: GpuModel, share: Decimal) -> int:
    """Memory that follows the model's per-card ratio (seed 000: 56 or 40 GiB per card)."""
    return gib_to_mib(gpu_model.memory_gib_per_card * share)


def ratio_vgpu_memory_mib(gpu_model: GpuModel, compute_percent: int) -> int:
    """GPU memory of one virtual GPU: its compute % of the card's memory."""
    return gpu_model.card_memory_mib * compute_percent // 100


def ratio_cpu_memory_mib(cpu_milli: int, ratio_gib_per_core: int) -> int:
    return cpu_milli * ratio_gib_per_core * MIB_PER_GIB // MILLI_PER_CORE
