"""What placement learns the workload from: the shapes of the jobs waiting and lately run.

Fragmentation-aware placement (``fragmentation.py``) needs how often each request
shape arrives, and how the shares that arrive pack (``share_packing.py``). Each pass
with jobs waiting counts the shapes of every waiting job (the pass has them already)
and of the last ``RECENT_JOBS`` jobs submitted that are not waiting, whatever became of
them (one query): a site's workload as it is now, never assumed, that follows it as it
changes. The waiting jobs are what is about to be placed: a burst of 8,000 counts
whole, not only the last 2,000 submitted (``bench/scheduler_trace.py``, whose trace
changes its shares' sizes over time: the GPU allocated after the burst, 94.4 % with the
burst's tail alone, 95.5 % with all of it). With no GPU job among them, or with
``TRAINYARD_FRAGMENTATION_AWARE`` off, placement is best fit alone.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from typing import TYPE_CHECKING

from django.conf import settings
from django.db.models import Count

from jobs.models import Job
from resources.quota import REQUEST_FIELDS, request_from_values

from .cluster import Cluster, Typical
from .placement import Shape

if TYPE_CHECKING:
    from .queue import WaitingJob

# Enough jobs for the shapes' frequencies to settle (the openb trace's 35 commonest shapes
# cover 95 % of its 8,152 jobs), few enough to read in a few milliseconds each pass.
RECENT_JOBS = 2000


def learn_workload(cluster: Cluster, waiting: Iterable[WaitingJob] = ()) -> None:
    """Give ``cluster`` the workload of the ``waiting`` jobs and of the recent ones not
    waiting, if any asked for GPUs.

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

    others = Job.objects.exclude(state__in=Job.WAITING_STATES)
    recent = others.order_by("-pk").values("pk")[:RECENT_JOBS]
    # Most recent jobs repeat a few requests: the database counts each once.
    rows = (
        Job.objects.filter(pk__in=recent)
        .values_list(*REQUEST_FIELDS)
        .annotate(times=Count("pk"))
        .order_by()
    )
    requests = Counter(job.request for job in waiting)
    for *values, times in rows:
        requests[request_from_values(values, cluster.catalog)] += times
    shapes: Counter[Shape] = Counter()
    for request, times in requests.items():
        models = cluster.models_of(request.gpu_model.name if request.gpu_model else None)
        shapes[Shape.of(request, models)] += times
    cluster.workload = Workload.of(shapes)
    if cluster.workload is not None:
        cluster.typical = Typical()
