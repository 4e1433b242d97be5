"""Each user's fair-share factor: recent use, decayed with a half-life, against their share.

Slurm's classic multifactor formula, on what billing already records:

- usage(u) = Σ over u's ledger rows: unit-hours × weight × ½^(age ÷ half-life), where
  the weight is the admin's for the row's model (``UsageWeight``; CPU rows: the
  core-hour's), else that model's list price per unit-hour now, else 1;
- factor(u) = 2^(−(usage(u) ÷ Σ usage) ÷ (shares(u) ÷ Σ shares)), the sums over the
  users compared (those with waiting jobs, and those with recent use).

1.0: no recent use; 0.5: exactly their share; towards 0: far over it. The queue
orders jobs of one priority by it, highest first (``jobs/scheduler/queue.py``).
Rows are summed per user, model and day in one query over ten half-lives (after
which a row weighs under 0.1 %); each day decays from its middle.

That sum is the costly part (its three queries read up to ten half-lives of the ledger),
and every scheduling pass, every Slurm submission and every job's API record asks for
factors. So, as Slurm recomputes its decayed usage once per ``PriorityCalcPeriod``
(5 minutes by default) rather than per job, the decayed usage is kept in the cache for
``USAGE_REFRESH_SECONDS``: a factor then costs two queries (the site's settings and the
shares, which an admin's change moves at once), and a job's usage counts within that
refresh of its row being written.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from datetime import datetime, timedelta

from django.core.cache import cache
from django.db.models import Sum
from django.db.models.functions import TruncDate

from billing.models import Price, UsageRecord
from billing.pricing import PriceBook
from resources.models import SiteSettings, UsageWeight, UserShare

WINDOW_HALF_LIVES = 10
USAGE_REFRESH_SECONDS = 10
USAGE_KEY = "trainyard:fair-share-usage"


def fair_share_factors(*, user_ids: set[int], now: datetime) -> dict[int, float]:
    """The factor of each user of ``user_ids`` (2 queries: the site's settings and the
    shares; 5 when the decayed usage is recomputed: prices, weights, the ledger's days)."""
    if not user_ids:
        return {}
    half_life = timedelta(days=SiteSettings.load().fair_share_half_life_days)
    usage = recent_usage(now=now, half_life=half_life)
    users = set(user_ids) | {user for user, used in usage.items() if used > 0}
    shares = dict(UserShare.objects.filter(user_id__in=users).values_list("user_id", "shares"))
    total_usage = sum(usage.values())
    total_shares = sum(shares.get(user, 1) for user in users)
    factors = {}
    for user in user_ids:
        if total_usage <= 0:
            factors[user] = 1.0
            continue
        used = usage.get(user, 0.0) / total_usage
        entitled = shares.get(user, 1) / total_shares
        factors[user] = 2.0 ** (-used / entitled)
    return factors


def recent_usage(*, now: datetime, half_life: timedelta) -> dict[int, float]:
    """``decayed_usage`` as computed at most ``USAGE_REFRESH_SECONDS`` before ``now`` with
    this half-life (the cache's copy), else computed now and kept."""
    kept = cache.get(USAGE_KEY)
    if (
        kept is not None
        and kept["half_life"] == half_life
        and 0 <= now.timestamp() - kept["at"] < USAGE_REFRESH_SECONDS
    ):
        return kept["usage"]
    usage = decayed_usage(now=now, half_life=half_life)
    kept = {"at": now.timestamp(), "half_life": half_life, "usage": usage}
    cache.set(USAGE_KEY, kept, timeout=USAGE_REFRESH_SECONDS)
    return usage


def forget_recent_usage() -> None:
    """Drop the kept decayed usage: the next factor reads the ledger again."""
    cache.delete(USAGE_KEY)


def decayed_usage(*, now: datetime, half_life: timedelta) -> dict[int, float]:
    """Each user's weighted unit-hours, each day's halved per half-life of its age."""
    weight = usage_weights(now)
    rows = (
        UsageRecord.objects.filter(period_end__gt=now - WINDOW_HALF_LIVES * half_life)
        .annotate(day=TruncDate("period_end"))
        .values_list("account__user_id", "gpu_model_id", "day")
        .annotate(seconds=Sum("unit_seconds"))
        .order_by()
    )
    usage: dict[int, float] = defaultdict(float)
    for user, model, day, seconds in rows:
        middle = datetime.combine(day, datetime.min.time(), now.tzinfo) + timedelta(hours=12)
        age = max(timedelta(0), now - middle)
        decay = 0.5 ** (age / half_life)
        usage[user] += float(seconds) / 3600 * weight(model) * decay
    return dict(usage)


def usage_weights(now: datetime) -> Callable[[int | None], float]:
    """Weight per unit-hour of a GPU model id (None: the CPU core-hour): set, else the list
    price in effect now (``PriceBook``), else 1."""
    book = PriceBook.load()
    set_weights = dict(UsageWeight.objects.values_list("gpu_model_id", "weight"))

    def weight(model: int | None) -> float:
        if model in set_weights:
            return float(set_weights[model])
        unit = Price.Unit.CORE_HOUR if model is None else Price.Unit.CARD_HOUR
        price = book.price_at(unit=unit, gpu_model_id=model, moment=now)
        return float(price.amount) if price else 1.0

    return weight
