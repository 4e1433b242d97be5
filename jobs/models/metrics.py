"""What a running replica attempt uses, as its node's agent samples it (agent/usage.py)."""

from __future__ import annotations

from django.db import models
from django.utils.translation import gettext_lazy as _

from .replicas import ReplicaAttempt


class AttemptSample(models.Model):
    """One look at an attempt's processes and cards. CPU time and I/O are running totals
    (rates come from two samples: ``jobs/usage_metrics.py``); memory and cards are as seen."""

    attempt = models.ForeignKey(ReplicaAttempt, on_delete=models.CASCADE, related_name="samples")
    at = models.DateTimeField(_("sampled at"))
    cpu_seconds = models.FloatField(_("CPU seconds so far"))
    memory_mib = models.PositiveIntegerField(_("memory (MiB)"))
    read_bytes = models.BigIntegerField(_("bytes read so far"), default=0)
    write_bytes = models.BigIntegerField(_("bytes written so far"), default=0)
    # Per allocated card, from NVML: [{"index", "util", "memory_mib", "power_w", "temp_c"}].
    gpus = models.JSONField(_("cards"), default=list, blank=True)
    # Their mean GPU %, kept as a column so the database averages it (None: no cards seen).
    gpu_util = models.FloatField(_("mean GPU use (%)"), null=True, blank=True)

    class Meta:
        verbose_name = _("usage sample")
        verbose_name_plural = _("usage samples")
        indexes = [models.Index(fields=["attempt", "at"], name="sample_attempt_at")]


def mean_util(cards: list[dict]) -> float | None:
    """The cards' mean GPU %, as ``AttemptSample.gpu_util`` keeps it."""
    return round(sum(card["util"] for card in cards) / len(cards), 1) if cards else None
