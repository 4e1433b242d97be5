"""What a live pass reads: the waiting jobs in queue order, the cluster, what the recent
jobs asked for, and the jobs Slurm holds for it (a fixed number of queries)."""

from __future__ import annotations

from datetime import datetime

from billing.fair_share import fair_share_factors
from resources.catalog import ModelCatalog

from .checkpoints import previous_nodes
from .cluster import Cluster, typical_of
from .lookahead import Lookahead
from .passes import SchedulingPass
from .queue import in_fair_share_order, load_waiting, waiting_rows
from .reclaim import victims_nodes
from .workload import learn_workload


def load_pass(*, now: datetime) -> SchedulingPass:
    """A pass over the waiting jobs and the cluster as the database has them."""
    rows = waiting_rows()
    # With nothing waiting (most beat passes) there is nothing else to read.
    catalog = ModelCatalog.load() if rows else ModelCatalog()
    cluster = Cluster.load(catalog) if rows else Cluster([], catalog)
    jobs = load_waiting(rows, catalog)
    lookahead = Lookahead.load() if jobs else None
    if jobs:
        owners = {job.owner_id for job in jobs} | lookahead.owners
        factors = fair_share_factors(user_ids=owners, now=now)
        jobs = in_fair_share_order(jobs, factors)
        lookahead.rank(factors)
    cluster.typical = typical_of(job.request for job in jobs)
    if jobs:
        learn_workload(cluster, jobs)
    scheduling = SchedulingPass(now=now, cluster=cluster, jobs=jobs)
    scheduling.ran_on = previous_nodes(jobs)
    scheduling.victim_nodes = victims_nodes([job.pk for job in jobs if job.reclaiming])
    scheduling.lookahead = lookahead
    return scheduling
