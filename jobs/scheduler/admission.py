"""Admission: does the owner's quota leave room for this job, on which models?

Quota is per user and per resource key; what starting and running jobs hold
counts (``resources.quota``). A request for an aggregated model is admitted
for each member whose charge (the member's key plus the aggregates' keys)
fits; placement then only considers nodes of the admitted members.

A preemptible job that does not fit may borrow (``admit_borrowing``): what
borrowed jobs hold is kept apart from the quota's usage, and capped only by
the owner's borrow limits (``Quota.borrow_limit``; none: no cap).
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

from core.reasons import Reason
from jobs.quota_usage import Holding, quota_holdings_for
from resources.catalog import ModelCatalog
from resources.quota import borrow_limits_for, charged_vector, quota_limits_for
from resources.vector import ResourceVector

from .queue import WaitingJob
from .reasons import borrow_reason, first_key, quota_reason


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
        held = quota_holdings_for(user_ids=limited, catalog=catalog) if limited else {}
        # Per owner, by job: a simulated end gives its job's holding back at once.
        self.holdings: dict[int, dict[int, Holding]] = {
            owner: {holding.job_id: holding for holding in holdings}
            for owner, holdings in held.items()
        }
        self.usage: dict[int, dict[str, int]] = {}
        self.borrowed: dict[int, dict[str, int]] = {}
        for user_id in limited:
            self.usage[user_id], self.borrowed[user_id] = {}, {}
            # Running jobs mostly share their charge (one vector, ``quota_holdings_for``):
            # each distinct one is added up once, times the jobs holding it.
            times: dict[tuple[int, bool], list] = {}  # (vector's id, borrowed) -> [vector, n]
            for holding in self.holdings.get(user_id, {}).values():
                key = (id(holding.vector), holding.borrowed)
                times.setdefault(key, [holding.vector, 0])[1] += 1
            for (_identity, borrowed), (vector, count) in times.items():
                _add(self.borrowed if borrowed else self.usage, user_id, vector, count)
        self._borrow_limits: dict[int, dict[str, int]] | None = None  # read when first needed
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
        return self._within(job, options, self.usage[job.owner_id], limits, quota_reason)

    def admit_borrowing(self, job: WaitingJob) -> Admission:
        """The models a preemptible job beyond its quota may borrow on, within the borrow
        limits; or why none (the first limit it would pass)."""
        requested = job.requested_model
        options = (None,) if requested is None else self.catalog.physical_models(requested)
        if self._borrow_limits is None:
            self._borrow_limits = borrow_limits_for(user_ids=set(self.usage))
        limits = self._borrow_limits.get(job.owner_id, {})
        borrowed = self.borrowed.get(job.owner_id, {})
        return self._within(job, options, borrowed, limits, borrow_reason)

    def _within(self, job, options, usage, limits, reason: Callable[..., Reason]) -> Admission:
        """The models whose charge keeps ``usage`` within ``limits``, or the first shortfall
        as ``reason`` words it."""
        allowed: list[str | None] = []
        first_short = None
        for model, charge in self._charges(job, options):
            short = _short_keys(charge, usage, limits)
            if not short:
                allowed.append(model)
            elif first_short is None:
                key = first_key(short)
                first_short = reason(
                    key=key, need=charge[key], limit=limits[key], used=usage.get(key, 0)
                )
        if allowed or not options:
            return Admission(None if job.requested_model is None else tuple(allowed))
        return Admission(None, first_short)

    def end_borrowing(self) -> list[int]:
        """Borrowing jobs whose owner's quota now has room for them (oldest first) are
        counted within it from now on: no longer borrowing, so neither preempted nor
        preempting their owner's own jobs. Their ids, to write."""
        ended = []
        for owner, holdings in self.holdings.items():
            limits = self.limits.get(owner) or {}
            for holding in sorted(
                (holding for holding in holdings.values() if holding.borrowed),
                key=lambda held: (held.started_at is None, held.started_at, held.job_id),
            ):
                if _short_keys(holding.vector, self.usage[owner], limits):
                    continue
                holdings[holding.job_id] = holding._replace(borrowed=False)
                _add(self.usage, owner, holding.vector)
                _add(self.borrowed, owner, holding.vector, -1)
                ended.append(holding.job_id)
                self._answers.pop(owner, None)
        return ended

    def charge_started(
        self, job: WaitingJob, node_models: list[str | None], now: datetime, *, borrowed=False
    ) -> None:
        """Count a job that starts in this pass against its owner's quota (or borrowing)."""
        if job.owner_id not in self.usage:
            return
        self._answers.pop(job.owner_id, None)
        vector = charged_vector(job.request, physical=node_models, catalog=self.catalog)
        _add(self.borrowed if borrowed else self.usage, job.owner_id, vector)
        self.holdings.setdefault(job.owner_id, {})[job.pk] = Holding(
            job.pk, vector, now, job.max_runtime_minutes, borrowed
        )

    def give_back(self, owner_id: int, job_id: int) -> None:
        """Stop counting a job that ends (the start forecast's simulated ends)."""
        holding = self.holdings.get(owner_id, {}).pop(job_id, None)
        if holding is None:
            return
        self._answers.pop(owner_id, None)
        _add(self.borrowed if holding.borrowed else self.usage, owner_id, holding.vector, -1)

    def copy(self) -> Quotas:
        """Another view of the same limits and usage, to change without changing this one."""
        other = copy.copy(self)
        other.usage = {owner: dict(totals) for owner, totals in self.usage.items()}
        other.borrowed = {owner: dict(totals) for owner, totals in self.borrowed.items()}
        other.holdings = {owner: dict(held) for owner, held in self.holdings.items()}
        other._answers = {}
        return other

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


def _add(
    totals: dict[int, dict[str, int]], owner_id: int, vector: ResourceVector, times: int = 1
) -> None:
    """Add ``vector`` ``times`` times (-1: take it away) to the owner's totals."""
    owned = totals[owner_id]
    for key, amount in vector.items():
        owned[key] = owned.get(key, 0) + times * amount


def _short_keys(charge: ResourceVector, usage: dict[str, int], limits: dict[str, int]) -> list[str]:
    return [k for k in charge if k in limits and usage.get(k, 0) + charge[k] > limits[k]]
