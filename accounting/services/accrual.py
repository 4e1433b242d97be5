"""The usage accrual: every started replica attempt, period by period, into the ledger.

Exactly once, however the task runs (twice at once, late, or again after a
worker died half-way): each account is accrued in one transaction under its
row lock, and each attempt continues from its cursor (``AttemptAccrual``), so
a second run finds nothing left to write and a crashed run wrote nothing.
The unique key (attempt, period start) makes the database refuse a double
row even if this code were wrong.

Running attempts are accrued up to the current grid period, less the node
heartbeat timeout: a node that went silent may turn out to be lost, and time
lost to the platform is not billed. An attempt's end closes its last period.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import ROUND_HALF_UP, Decimal

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import transaction
from django.db.models import Q
from django.utils import timezone
from django.utils.translation import gettext as _

from billing.accounts import account_for_user
from billing.models import SECONDS_PER_HOUR, Account, AttemptAccrual, FreeGrant, Price, UsageRecord
from billing.periods import Period, grid_floor, split_periods, to_second
from billing.pricing import PriceBook
from jobs.models import ReplicaAttempt
from resources.models import ResourceKind, SiteSettings

from .grants import GrantUse, grant_consequences
from .hours import usage_hours_add

logger = logging.getLogger(__name__)

MONEY_QUANTUM = Decimal("0.000001")
REASON_MAX = 255


@dataclass(frozen=True)
class Metering:
    """What one replica attempt consumes per second: which unit, of which model, how many."""

    unit: str
    gpu_model_id: int | None
    quantity: Decimal


@dataclass(frozen=True)
class PendingPeriod:
    period: Period
    attempt: ReplicaAttempt
    metering: Metering


def attempt_metering(attempt: ReplicaAttempt) -> Metering:
    """Cards (a virtual GPU counts its compute share) of the node's model, or CPU cores."""
    job = attempt.replica.job
    if job.resource_kind == ResourceKind.CPU:
        return Metering(Price.Unit.CORE_HOUR, None, Decimal(job.cpu_milli) / 1000)
    cards = Decimal(job.gpu_count)
    if job.resource_kind == ResourceKind.VGPU:
        cards = cards * job.vgpu_compute_percent / 100
    # The node's model, not the request's: an aggregated request runs on one member model.
    return Metering(Price.Unit.CARD_HOUR, attempt.node.gpu_model_id or job.gpu_model_id, cards)


def usage_accrue(*, now: datetime | None = None) -> int:
    """Accrue every started attempt not yet closed; return how many ledger rows were written."""
    now = now or timezone.now()
    settle = timedelta(seconds=SiteSettings.load().heartbeat_timeout_seconds)
    horizon = grid_floor(now - settle, settings.TRAINYARD_BILLING_PERIOD_SECONDS)
    book = PriceBook.load()
    written, failed = 0, None
    for account_id, attempt_ids in sorted(_pending_attempts_by_account(horizon).items()):
        try:
            written += _accrue_account(account_id, attempt_ids, horizon=horizon, book=book)
        except Exception as error:  # one account's trouble must not stop the others'
            logger.exception("usage accrual failed for account %s", account_id)
            failed = failed or error
    if failed:
        raise failed
    return written


def _pending_attempts_by_account(horizon: datetime) -> dict[int, list[int]]:
    """Attempts with something to write: new ones, ended ones not closed, running ones behind."""
    pending = (
        ReplicaAttempt.objects.filter(started_at__isnull=False)
        .filter(
            Q(accrual__isnull=True)
            | Q(accrual__closed=False, ended_at__isnull=False)
            | Q(accrual__closed=False, accrual__billed_until__lt=horizon)
        )
        .values_list("pk", "replica__job__owner_id")
    )
    by_owner: dict[int, list[int]] = defaultdict(list)
    for attempt_id, owner_id in pending:
        by_owner[owner_id].append(attempt_id)
    accounts = dict(Account.objects.filter(user_id__in=by_owner).values_list("user_id", "pk"))
    for user in get_user_model().objects.filter(pk__in=set(by_owner) - set(accounts)):
        accounts[user.pk] = account_for_user(user=user).pk
    return {accounts[owner_id]: ids for owner_id, ids in by_owner.items()}


def _accrue_account(
    account_id: int, attempt_ids: list[int], *, horizon: datetime, book: PriceBook
) -> int:
    with transaction.atomic():
        # The account's lock serialises accrual runs and the free-grant consumption.
        account = Account.objects.select_for_update().get(pk=account_id)
        grants = GrantUse(
            FreeGrant.objects.select_for_update(of=("self",))
            .select_related("gpu_model")
            .filter(account=account)
        )
        attempts = (
            ReplicaAttempt.objects.filter(pk__in=attempt_ids)
            .select_related("replica__job", "node")
            .order_by("pk")
        )
        cursors = AttemptAccrual.objects.in_bulk(attempt_ids)
        existing_cursors = set(cursors)
        pending: list[PendingPeriod] = []
        for attempt in attempts:
            pending += _advance(attempt, cursors, horizon=horizon, book=book)
        # Time order across the account's attempts: the grant goes to the earliest use.
        pending.sort(key=lambda p: (p.period.start, p.attempt.pk))
        rows = [_ledger_row(account, item, grants, book) for item in pending]
        UsageRecord.objects.bulk_create(rows)
        usage_hours_add(account_id=account.pk, rows=rows)
        _save_cursors(cursors, existing_cursors)
        grants.save()
        grant_consequences(account=account, grants=grants)
    return len(rows)


def _advance(
    attempt: ReplicaAttempt,
    cursors: dict[int, AttemptAccrual],
    *,
    horizon: datetime,
    book: PriceBook,
) -> list[PendingPeriod]:
    """The attempt's periods after its cursor; moves the cursor (saved by the caller)."""
    cursor = cursors.get(attempt.pk)
    if cursor is None:
        cursor = AttemptAccrual(attempt=attempt, billed_until=to_second(attempt.started_at))
        cursors[attempt.pk] = cursor
    elif cursor.closed:
        return []
    end = to_second(attempt.ended_at) if attempt.ended_at else horizon
    metering = attempt_metering(attempt)
    periods = split_periods(
        start=cursor.billed_until,
        end=end,
        period_seconds=settings.TRAINYARD_BILLING_PERIOD_SECONDS,
        cuts=[
            *book.changes(unit=metering.unit, gpu_model_id=metering.gpu_model_id),
            *([to_second(attempt.training_started_at)] if attempt.training_started_at else []),
        ],
        phase_at=_phase_of(attempt),
    )
    cursor.billed_until = max(cursor.billed_until, end)
    # An end the executor recorded earlier than time already accrued closes with nothing more.
    cursor.closed = attempt.ended_at is not None
    return [PendingPeriod(period, attempt, metering) for period in periods]


def _phase_of(attempt: ReplicaAttempt):
    training_from = to_second(attempt.training_started_at) if attempt.training_started_at else None

    def phase_at(moment: datetime) -> str:
        if training_from is None:
            return attempt.phase
        if moment < training_from:
            return UsageRecord.Phase.AUGMENTATION
        return UsageRecord.Phase.TRAINING

    return phase_at


def _ledger_row(
    account: Account, item: PendingPeriod, grants: GrantUse, book: PriceBook
) -> UsageRecord:
    period, attempt, metering = item.period, item.attempt, item.metering
    unit_seconds = metering.quantity * period.seconds
    price = book.price_at(
        unit=metering.unit, gpu_model_id=metering.gpu_model_id, moment=period.start
    )
    row = UsageRecord(
        account=account,
        job_id=attempt.replica.job_id,
        attempt=attempt,
        phase=period.phase,
        gpu_model_id=metering.gpu_model_id,
        unit=metering.unit,
        period_start=period.start,
        period_end=period.end,
        quantity=metering.quantity,
        unit_seconds=unit_seconds,
        free_unit_seconds=Decimal(0),
        billable_unit_seconds=Decimal(0),
        unit_price=price.amount if price else Decimal(0),
        amount=Decimal(0),
        currency=price.currency if price else settings.TRAINYARD_CURRENCY,
    )
    if attempt.platform_fault:
        return _unbilled(row, _("Lost to the platform: %(why)s") % {"why": attempt.reason or "—"})
    if metering.unit == Price.Unit.CARD_HOUR:
        row.free_unit_seconds = grants.take(
            gpu_model_id=metering.gpu_model_id, unit_seconds=unit_seconds, job_id=row.job_id
        )
    rest = unit_seconds - row.free_unit_seconds
    if not rest:
        return row
    if not account.charges_at(period.start):
        if grants.covers(metering.gpu_model_id):
            return _unbilled(row, grants.used_up_reason(metering.gpu_model_id).english)
        return _unbilled(row, _("Not charged: billing is not enabled for this account"))
    if price is None:
        return _unbilled(row, _("Not charged: no price was set for this resource at that time"))
    row.billable_unit_seconds = rest
    row.amount = (rest * price.amount / SECONDS_PER_HOUR).quantize(MONEY_QUANTUM, ROUND_HALF_UP)
    return row


def _unbilled(row: UsageRecord, reason: str) -> UsageRecord:
    row.billed = False
    row.unbilled_reason = reason[:REASON_MAX]
    return row


def _save_cursors(cursors: dict[int, AttemptAccrual], existing: set[int]) -> None:
    AttemptAccrual.objects.bulk_create(c for pk, c in cursors.items() if pk not in existing)
    AttemptAccrual.objects.bulk_update(
        [c for pk, c in cursors.items() if pk in existing], ["billed_until", "closed"]
    )
