"""What placement learns the workload from: the shapes of the jobs submitted lately.

Fragmentation-aware placement (``fragmentation.py``) needs how often each request
shape arrives. Each pass with jobs waiting reads the requests of the last
``RECENT_JOBS`` jobs submitted, whatever became of them (one query), and counts
their shapes: a site's workload as it is now, never assumed, that follows it as it
changes. With no GPU job among them, or with ``TRAINYARD_FRAGMENTATION_AWARE`` off,
placement is best fit alone.
"""

from __future__ import annotations

from collections import Counter

from django.conf import settings
from django.db.models import Count

from jobs.models import Job
from resources.quota import REQUEST_FIELDS, request_from_values

from .cluster import Cluster, Typical
from .placement import Shape

# Enough jobs for the shapes' frequencies to settle (the openb trace's 35 commonest shapes
# cover 95 % of its 8,152 jobs), few enough to read in a few milliseconds each pass.
RECENT_JOBS = 2000


def learn_workload(cluster: Cluster) -> None:
    """Give ``cluster`` the workload of the recent jobs, if any asked for GPUs.

    Best fit then only breaks ties between nodes the fragmentation scores alike, by the
    cards it would strand without CPU and memory beside them; for that it keeps the
    default ``Typical`` (12 cores and 56 GiB per card) rather than the queue's median:
    on the openb replay (``bench/placement_fgd.py``, seeds 42-45) the queue's view
    allocates 94.5 %, the median of the recent jobs 94.7 %, their mean 94.9 %, the
    nodes' own ratio 94.7 %, the default 95.4 %.
    """
    if not settings.TRAINYARD_FRAGMENTATION_AWARE:
        return
    from .fragmentation import Workload  # numpy: loaded by the first pass, not at start-up

    recent = Job.objects.order_by("-pk").values("pk")[:RECENT_JOBS]
    # Most recent jobs repeat a few requests: the database counts each once.
    rows = (
        Job.objects.filter(pk__in=recent)
        .values_list(*REQUEST_FIELDS)
        .annotate(times=Count("pk"))
        .order_by()
    )
    shapes: Counter[Shape] = Counter()
    for *values, times in rows:
        request = request_from_values(values, cluster.catalog)
        models = cluster.models_of(request.gpu_model.name if request.gpu_model else None)
        shapes[Shape.of(request, models)] += times
    cluster.workload = Workload.of(shapes)
    if cluster.workload is not None:
        cluster.typical = Typical()
