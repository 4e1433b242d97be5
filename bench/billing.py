"""Billing statements and the admin overview over a million ledger rows on PostgreSQL.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/trainyard \\
        .venv/bin/python bench/billing.py [--rows 1000000] [--repeat 5]

It works in its own scratch database (``<name>_billing_bench``), created and dropped
here. 1,000 accounts, one of them "heavy" (10 % of all rows), jobs of 1-4 cards
with one attempt of 100 one-minute rows each, spread over ``--months`` months
from January 2026; the month measured is January. With ``--months 1`` (the
default) every row lies in that month: the worst case, where the overview sums
all of them and the heavy user's month has 100,000 rows. The rows are written
by one ``INSERT … SELECT`` over ``generate_series`` (no Python loop).

Prints the median and worst wall time of: a typical user's statement, the
heavy user's statement, the overview, and the three pages over HTTP (Django
test client, middleware and templates included); then the plans of the
statement's and the overview's main queries. Targets: < 300 ms for a user's
month, < 1 s for the overview.
"""

from __future__ import annotations

import argparse
import statistics
import time
from datetime import UTC, datetime, timedelta

from scratch import django_setup, scratch_database

ACCOUNTS = 1000
HEAVY_SHARE = 0.10
ROWS_PER_ATTEMPT = 100
FIRST_DAY = datetime(2026, 1, 1, tzinfo=UTC)
MINUTES_PER_MONTH = 30 * 24 * 60


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--months", type=int, default=1, help="months the rows spread over")
    parser.add_argument("--running", type=int, default=1000, help="attempts the accrual meets")
    args = parser.parse_args()

    django_setup()
    with scratch_database("billing_bench"):
        heavy, typical = populate(args.rows, args.months)
        measure(heavy, typical, args.repeat)
        explain(heavy)
        accrual(args.running)


def populate(rows: int, months: int):
    """Users, accounts, jobs with one attempt each, then the ledger rows in one statement."""
    from django.conf import settings
    from django.contrib.auth import get_user_model
    from django.db import connection

    from billing.models import Account, Price
    from jobs.models import Job, Project, Replica, ReplicaAttempt
    from resources.models import GpuModel, Node

    started = time.perf_counter()
    p4 = GpuModel.objects.create(
        name="P4", card_memory_gib=8, cpu_cores_per_card=12, memory_gib_per_card=40, free_tier=True
    )
    v100 = GpuModel.objects.create(
        name="V100", card_memory_gib=16, cpu_cores_per_card=12, memory_gib_per_card=56
    )
    for model, amount in ((p4, 3), (v100, 12)):
        Price.objects.create(gpu_model=model, unit="card_hour", amount=amount, valid_from=FIRST_DAY)
    nodes = {
        m.pk: Node.objects.create(
            name=f"node-{m.name}", gpu_model=m, gpu_count=8, cpu_milli=96_000, memory_mib=458_752
        )
        for m in (p4, v100)
    }
    User = get_user_model()
    users = User.objects.bulk_create(
        User(username=f"bench{n:04d}", password="!") for n in range(ACCOUNTS)
    )
    Account.objects.bulk_create(
        Account(user=u, billing_enabled=n % 2 == 0) for n, u in enumerate(users)
    )
    projects = Project.objects.bulk_create(
        Project(name=f"project-{u.username}", owner=u) for u in users
    )
    heavy_rows = int(rows * HEAVY_SHARE)
    heavy_attempts = heavy_rows // ROWS_PER_ATTEMPT
    other_attempts = (rows - heavy_rows) // ROWS_PER_ATTEMPT
    owners = [0] * heavy_attempts + [1 + n % (ACCOUNTS - 1) for n in range(other_attempts)]
    jobs = Job.objects.bulk_create(
        Job(
            owner=users[o],
            project=projects[o],
            name=f"job-{n}",
            resource_kind="gpu",
            gpu_model=v100 if n % 3 else p4,
            gpu_count=1 + n % 4,
            cpu_milli=12_000,
            memory_mib=57_344,
            command="python train.py",
            state="succeeded",
        )
        for n, o in enumerate(owners)
    )
    replicas = Replica.objects.bulk_create(
        Replica(job=j, index=0, node=nodes[j.gpu_model_id]) for j in jobs
    )
    span = months * MINUTES_PER_MONTH - ROWS_PER_ATTEMPT
    ReplicaAttempt.objects.bulk_create(
        ReplicaAttempt(
            replica=r,
            number=1,
            node=r.node,
            state="succeeded",
            started_at=FIRST_DAY + timedelta(minutes=(n * 7919) % span),
            ended_at=FIRST_DAY + timedelta(minutes=(n * 7919) % span + ROWS_PER_ATTEMPT),
        )
        for n, r in enumerate(replicas)
    )
    with connection.cursor() as cursor:
        cursor.execute(LEDGER_SQL, {"minutes": ROWS_PER_ATTEMPT, "p4": p4.pk})
        cursor.execute(HOURS_SQL, {"zone": settings.TIME_ZONE})
        cursor.execute(CURSORS_SQL)
        cursor.execute("VACUUM ANALYZE billing_usagerecord")
        cursor.execute(
            "SELECT count(*), pg_size_pretty(pg_total_relation_size('billing_usagerecord'))"
            " FROM billing_usagerecord"
        )
        count, size = cursor.fetchone()
    print(f"ledger: {count:,} rows ({size}) written in {time.perf_counter() - started:.1f} s")
    accounts = Account.objects.order_by("pk")
    return accounts[0], accounts[ACCOUNTS // 2]


# One row per attempt and minute: P4 rows free, V100 rows billable at 12/card-hour.
LEDGER_SQL = """
INSERT INTO billing_usagerecord (
    account_id, job_id, attempt_id, phase, gpu_model_id, unit, period_start, period_end,
    quantity, unit_seconds, free_unit_seconds, billable_unit_seconds, unit_price, amount,
    currency, billed, unbilled_reason, created_at)
SELECT acc.id, j.id, a.id, 'training', j.gpu_model_id, 'card_hour',
       a.started_at + m * interval '1 minute', a.started_at + (m + 1) * interval '1 minute',
       j.gpu_count, 60 * j.gpu_count,
       CASE WHEN j.gpu_model_id = %(p4)s THEN 60 * j.gpu_count ELSE 0 END,
       CASE WHEN j.gpu_model_id = %(p4)s THEN 0 ELSE 60 * j.gpu_count END,
       CASE WHEN j.gpu_model_id = %(p4)s THEN 3 ELSE 12 END,
       CASE WHEN j.gpu_model_id = %(p4)s THEN 0 ELSE 0.2 * j.gpu_count END,
       'CNY', true, '', now()
FROM jobs_replicaattempt a
JOIN jobs_replica r ON r.id = a.replica_id
JOIN jobs_job j ON j.id = r.job_id
JOIN billing_account acc ON acc.user_id = j.owner_id
CROSS JOIN generate_series(0, %(minutes)s - 1) AS m
"""

# What the accrual keeps beside the rows: their sums by hour of the site's clock ...
HOURS_SQL = """
INSERT INTO billing_usagehour (
    account_id, job_id, gpu_model_id, unit, unit_price, hour, unit_seconds, free_unit_seconds,
    billable_unit_seconds, amount, ledger_rows)
SELECT account_id, job_id, gpu_model_id, unit, unit_price,
       date_trunc('hour', period_start AT TIME ZONE %(zone)s) AT TIME ZONE %(zone)s,
       sum(unit_seconds), sum(free_unit_seconds), sum(billable_unit_seconds), sum(amount), count(*)
FROM billing_usagerecord
GROUP BY 1, 2, 3, 4, 5, 6
"""
# ... and each attempt's cursor, closed at its end.
CURSORS_SQL = """
INSERT INTO billing_attemptaccrual (attempt_id, billed_until, closed)
SELECT id, ended_at, true FROM jobs_replicaattempt
"""


def timed(label: str, call, repeat: int) -> None:
    call()  # warm the caches once
    seconds = []
    for _ in range(repeat):
        started = time.perf_counter()
        call()
        seconds.append(time.perf_counter() - started)
    print(
        f"{label:<44} median {statistics.median(seconds) * 1000:7.1f} ms"
        f"   worst {max(seconds) * 1000:7.1f} ms"
    )


def measure(heavy, typical, repeat: int) -> None:
    from django.test import Client

    from accounting.selectors import month_usage, overview_for, statement_for
    from billing.models import UsageRecord
    from billing.months import Month

    month = Month(2026, 1)
    ledger = UsageRecord.objects.filter(period_start__gte=month.start, period_start__lt=month.end)
    hours = month_usage(month)
    print(f"{month}: {ledger.count():,} ledger rows, {hours.count():,} hour rows")
    for label, account in (("typical", typical), ("heavy", heavy)):
        rows = ledger.filter(account=account).count()
        timed(
            f"statement, {label} user ({rows:,} ledger rows)",
            lambda account=account: statement_for(account=account, month=month),
            repeat,
        )
    timed("overview, all accounts", lambda: overview_for(month=month), repeat)
    client = Client()
    client.force_login(heavy.user)
    heavy.user.is_staff = True
    heavy.user.save()
    for label, url in (
        ("GET /billing/ (heavy user's page)", f"/billing/?month={month}"),
        ("GET /api/v1/billing/statement (heavy)", f"/api/v1/billing/statement?month={month}"),
        ("GET /billing/overview/ (staff page)", f"/billing/overview/?month={month}"),
    ):
        timed(label, lambda url=url: client.get(url), repeat)


def explain(heavy) -> None:
    """The plans of the two big queries, taken from the selectors' own querysets."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from accounting.selectors import overview_for, statement_for
    from billing.months import Month

    month = Month(2026, 1)
    for label, call in (
        ("statement (heavy user)", lambda: statement_for(account=heavy, month=month)),
        ("overview", lambda: overview_for(month=month)),
    ):
        with CaptureQueriesContext(connection) as queries:
            call()
        sql = next(q["sql"] for q in queries.captured_queries if "billing_usagehour" in q["sql"])
        with connection.cursor() as cursor:
            cursor.execute("EXPLAIN (ANALYZE, COSTS OFF) " + sql)
            plan = [row[0] for row in cursor.fetchall()]
        print(f"\nplan, {label}:")
        print("\n".join("  " + line for line in plan[:9]))


def accrual(running: int) -> None:
    """One accrual run over ``running`` attempts that started ten minutes ago, then the next."""
    from accounting.services import usage_accrue
    from billing.models import Account, UsageRecord
    from jobs.models import Job, Replica, ReplicaAttempt

    started = datetime(2026, 6, 1, tzinfo=UTC)
    template = Job.objects.order_by("pk").first()
    accounts = list(Account.objects.select_related("user").order_by("pk")[:100])
    jobs = Job.objects.bulk_create(
        Job(
            owner=accounts[n % len(accounts)].user,
            project_id=template.project_id,
            name=f"running-{n}",
            resource_kind="gpu",
            gpu_model_id=template.gpu_model_id,
            gpu_count=2,
            cpu_milli=24_000,
            memory_mib=114_688,
            command="python train.py",
            state="running",
        )
        for n in range(running)
    )
    replicas = Replica.objects.bulk_create(
        Replica(job=job, index=0, node_id=template.replica_set.get().node_id) for job in jobs
    )
    ReplicaAttempt.objects.bulk_create(
        ReplicaAttempt(replica=r, number=1, node_id=r.node_id, state="running", started_at=started)
        for r in replicas
    )
    print(f"\naccrual, {running:,} running attempts of {min(running, len(accounts))} accounts:")
    for minutes, what in ((12, "first run, 10 minutes each"), (13, "next minute"), (13, "again")):
        before = UsageRecord.objects.count()
        began = time.perf_counter()
        usage_accrue(now=started + timedelta(minutes=minutes))
        took = time.perf_counter() - began
        written = UsageRecord.objects.count() - before
        print(f"  {what:<28} {written:>7,} rows in {took * 1000:8.1f} ms")


if __name__ == "__main__":
    main()
