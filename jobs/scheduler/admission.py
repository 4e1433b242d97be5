"""Admission: does the owner's quota leave room for this job, on which models?

Quota is per user and per resource key; what starting and running jobs hold
counts (``resources.quota``). A request for an aggregated model is admitted
for each member whose charge (the member's key plus the aggregates' keys)
fits; placement then only considers nodes of the admitted members.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from resources.catalog import ModelCatalog
from resources.quota import Holding, charged_vector, quota_holdings_for, quota_limits_for
from resources.vector import ResourceVector
from trainyard.reasons import Reason

from .queue import WaitingJob
from .reasons import first_key, quota_reason


@dataclass(frozen=True, slots=True)
class Admission:
    """Models the job may use (None for a CPU job), or why none: a quota reason."""

    models: tuple[str, ...] | None
    reason: Reason | None = None

    @property
    def admitted(self) -> bool:
        return self.reason is None


class Quotas:
    """Limits and usage of the waiting jobs' owners, kept current during the pass."""

    def __init__(self, *, owner_ids: set[int], catalog: ModelCatalog) -> None:
        self.catalog = catalog
        self.limits = quota_limits_for(user_ids=owner_ids)
        limited = {user_id for user_id, limits in self.limits.items() if limits}
        self.holdings: dict[int, list[Holding]] = (
            quota_holdings_for(user_ids=limited, catalog=catalog) if limited else {}
        )
        self.usage: dict[int, dict[str, int]] = {}
        for user_id in limited:
            totals: dict[str, int] = {}
            for holding in self.holdings.get(user_id, ()):
                for key, amount in holding.vector.items():
                    totals[key] = totals.get(key, 0) + amount
            self.usage[user_id] = totals
        # Answers per (owner, request); an owner's are forgotten when their usage grows.
        # Requests are interned per pass (``request_from_values``): keyed by identity.
        self._answers: dict[int, dict[int, Admission]] = {}
        self._options: dict[int, list[tuple[str | None, ResourceVector]]] = {}

    def admit(self, job: WaitingJob) -> Admission:
        answers = self._answers.setdefault(job.owner_id, {})
        answer = answers.get(id(job.request))
        if answer is None:
            answer = answers[id(job.request)] = self._admit(job)
        return answer

    def _admit(self, job: WaitingJob) -> Admission:
        requested = job.requested_model
        options: tuple[str | None, ...] = (
            (None,) if requested is None else self.catalog.physical_models(requested)
        )
        limits = self.limits.get(job.owner_id)
        if not limits:
            return Admission(None if requested is None else tuple(options))
        usage = self.usage[job.owner_id]
        allowed: list[str | None] = []
        first_short = None
        for model, charge in self._charges(job, options):
            short = _short_keys(charge, usage, limits)
            if not short:
                allowed.append(model)
            elif first_short is None:
                key = first_key(short)
                first_short = quota_reason(
                    key=key, need=charge[key], limit=limits[key], used=usage.get(key, 0)
                )
        if allowed or not options:
            return Admission(None if requested is None else tuple(allowed))
        return Admission(None, first_short)

    def charge_started(self, job: WaitingJob, node_models: list[str | None], now: datetime) -> None:
        """Count a job that starts in this pass against its owner's quota."""
        if job.owner_id not in self.usage:
            return
        self._answers.pop(job.owner_id, None)
        vector = charged_vector(job.request, physical=node_models, catalog=self.catalog)
        totals = self.usage[job.owner_id]
        for key, amount in vector.items():
            totals[key] = totals.get(key, 0) + amount
        self.holdings.setdefault(job.owner_id, []).append(
            Holding(job.pk, vector, now, job.max_runtime_minutes)
        )

    def quota_frees_at(self, job: WaitingJob, now: datetime) -> datetime | None:
        """When the owner's jobs, ending at their max run time, leave room (None: unknown)."""
        limits = self.limits.get(job.owner_id) or {}
        requested = job.requested_model
        options = (None,) if requested is None else self.catalog.physical_models(requested)
        moments = [self._frees_at(job, model, limits, now) for model in options]
        return min((moment for moment in moments if moment is not None), default=None)

    def _frees_at(
        self, job: WaitingJob, model: str | None, limits: dict[str, int], now: datetime
    ) -> datetime | None:
        charge = self._charge(job, model)
        usage = dict(self.usage.get(job.owner_id, {}))
        ending = sorted(
            ((_end(h, now), h) for h in self.holdings.get(job.owner_id, ()) if _end(h, now)),
            key=lambda item: item[0],
        )
        for end, holding in ending:
            for key, amount in holding.vector.items():
                usage[key] = usage.get(key, 0) - amount
            if all(usage.get(k, 0) + v <= limits[k] for k, v in charge.items() if k in limits):
                return max(now, end)
        return None

    def _charges(
        self, job: WaitingJob, options: tuple[str | None, ...]
    ) -> list[tuple[str | None, ResourceVector]]:
        """The charge of the job on each model it may use (the same for every owner)."""
        charges = self._options.get(id(job.request))
        if charges is None:
            charges = [(model, self._charge(job, model)) for model in options]
            self._options[id(job.request)] = charges
        return charges

    def _charge(self, job: WaitingJob, model: str | None) -> ResourceVector:
        return charged_vector(
            job.request, physical=[model] * job.request.replicas, catalog=self.catalog
        )


def _end(holding: Holding, now: datetime) -> datetime | None:
    if holding.max_runtime_minutes is None:
        return None
    return (holding.started_at or now) + timedelta(minutes=holding.max_runtime_minutes)


def _short_keys(charge: ResourceVector, usage: dict[str, int], limits: dict[str, int]) -> list[str]:
    return [k for k in charge if k in limits and usage.get(k, 0) + charge[k] > limits[k]]
