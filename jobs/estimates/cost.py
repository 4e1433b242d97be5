"""What an estimated run would cost the account, from the price table and its free grant."""

from __future__ import annotations

from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal

from django.utils import timezone

from billing.models import SECONDS_PER_HOUR, Account, FreeGrant, Price
from billing.pricing import PriceBook
from resources.models import GpuModel

from .estimate import Estimate

CENT = Decimal("0.01")


@dataclass(frozen=True)
class Cost:
    low: Decimal
    expected: Decimal
    high: Decimal
    currency: str
    free_card_hours: Decimal


def estimate_cost(
    *, account: Account, gpu_model: GpuModel, cards: int, estimate: Estimate
) -> Cost | None:
    """Charge for the estimate's low, expected and high time; None when no price is set.

    Free card-hours left on the account's grant for the model are used first,
    as the accrual does. A job for an aggregated model may land on any member:
    the cheapest member bounds the low end, the dearest the high end.
    """
    members = list(gpu_model.members.all()) if gpu_model.is_aggregated else [gpu_model]
    book = PriceBook.load()
    now = timezone.now()
    prices = {
        m.pk: book.price_at(unit=Price.Unit.CARD_HOUR, gpu_model_id=m.pk, moment=now)
        for m in members
    }
    if any(price is None for price in prices.values()):
        return None
    free = {
        grant.gpu_model_id: grant.remaining_card_seconds
        for grant in FreeGrant.objects.filter(account=account, gpu_model__in=members)
    }
    seconds = (estimate.low_seconds, estimate.seconds, estimate.high_seconds)
    charges = [
        sorted(
            _charge(Decimal(s * cards), free.get(m.pk, Decimal(0)), prices[m.pk].amount)
            for m in members
        )
        for s in seconds
    ]
    free_used = min(Decimal(estimate.seconds * cards), max(free.values(), default=Decimal(0)))
    return Cost(
        low=charges[0][0],
        expected=(sum(charges[1]) / len(charges[1])).quantize(CENT, ROUND_HALF_UP),
        high=charges[2][-1],
        currency=next(iter(prices.values())).currency,
        free_card_hours=(free_used / SECONDS_PER_HOUR).quantize(CENT, ROUND_HALF_UP),
    )


def _charge(card_seconds: Decimal, free_card_seconds: Decimal, price_per_hour: Decimal):
    billable = max(card_seconds - free_card_seconds, Decimal(0))
    return (billable * price_per_hour / SECONDS_PER_HOUR).quantize(CENT, ROUND_HALF_UP)
