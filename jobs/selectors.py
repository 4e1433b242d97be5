"""Reads of jobs and projects, scoped to what a user may see; the pages' queries."""

from django.contrib.auth.models import AbstractBaseUser
from django.db.models import DurationField, ExpressionWrapper, F, Q, QuerySet
from django.db.models.functions import Coalesce, Now
from django.utils import timezone

from billing.fair_share import fair_share_factors

from .models import (
    Dataset,
    Job,
    JobEvent,
    PersonalTemplate,
    PortAllocation,
    PretrainedModel,
    Project,
    ReplicaAttempt,
)
from .port_sites import PortSite
from .usage import jobs_with_usage


def projects_for_user(*, user: AbstractBaseUser) -> QuerySet[Project]:
    """Projects the user owns or is a member of."""
    return Project.objects.filter(Q(owner=user) | Q(members=user)).distinct()


def jobs_for_user(*, user: AbstractBaseUser) -> QuerySet[Job]:
    """Jobs the user owns, and jobs of the projects they belong to."""
    visible_projects = Project.objects.filter(Q(owner=user) | Q(members=user)).values("pk")
    return Job.objects.filter(Q(owner=user) | Q(project__in=visible_projects))


def jobs_user_may_operate(*, user: AbstractBaseUser) -> QuerySet[Job]:
    """Jobs the user may open, follow and stop: their own and their projects'; staff, all."""
    if user.is_staff:
        return Job.objects.all()
    return jobs_for_user(user=user)


def job_connect_points(job: Job) -> list[dict]:
    """Where others reach each open port while the job is placed: the node's address and
    the host port that publishes it, per replica (none once the job has released them); for
    replica 0, its site's address behind the authenticated proxy (jobs/port_sites.py)."""
    allocations = (
        # A replica Slurm has yet to place has no address yet.
        PortAllocation.objects.filter(
            replica__job=job, job_port__isnull=False, replica__node__isnull=False
        )
        .select_related("replica__node")
        .order_by("job_port", "replica__index")
    )
    return [
        {
            "port": row.job_port,
            "replica": row.replica.index,
            "node": row.replica.node.name,
            "host": row.replica.node.address,
            "host_port": row.host_port,
            # In a browser: replica 0's port through the authenticated proxy.
            "url": PortSite(job.pk, row.job_port).url if row.replica.index == 0 else None,
        }
        for row in allocations
    ]


def port_site_target(*, user: AbstractBaseUser, job_id: int, port: int) -> tuple[str, Job | None]:
    """Whether ``user`` may reach job ``job_id``'s open ``port`` now, and where: ``("", job)``
    with ``job.upstream`` (replica 0's node address, host port) set, or why not:
    ``"forbidden"`` (not a job they may open: the owner, project members, staff),
    ``"not_running"``, ``"not_open"`` (a port the job does not open). Two queries."""
    job = jobs_user_may_operate(user=user).filter(pk=job_id).only("state").first()
    if job is None:
        return "forbidden", None
    if job.state != Job.State.RUNNING:
        return "not_running", job
    row = (
        PortAllocation.objects.filter(
            replica__job=job, replica__index=0, job_port=port, replica__node__isnull=False
        )
        .values_list("replica__node__address", "host_port")
        .first()
    )
    if row is None:
        return "not_open", job
    job.upstream = row
    return "", job


def projects_listed(*, user: AbstractBaseUser) -> QuerySet[Project]:
    """The projects the jobs list offers as a filter, by name: the user's; staff, all."""
    projects = Project.objects.all() if user.is_staff else projects_for_user(user=user)
    return projects.order_by("name")


def job_list_rows(
    *,
    user: AbstractBaseUser,
    state: str = "",
    project: str = "",
    owner: str = "",
    node: str = "",
    search: str = "",
    order_field: str = "submitted_at",
    descending: bool = True,
) -> QuerySet[Job]:
    """The jobs list: what the user may see, filtered (empty: any), each with how long it
    ran (so far) and what billing recorded, sorted with empty values last, in one query."""
    jobs = jobs_user_may_operate(user=user).select_related("project", "gpu_model", "owner")
    if state:
        jobs = jobs.filter(state=state)
    if project:
        jobs = jobs.filter(project__name=project)
    if owner:
        jobs = jobs.filter(owner__username=owner)
    if node:
        jobs = jobs.filter(replica_set__node__name=node).distinct()
    if search:
        jobs = jobs.filter(name__icontains=search)
    ran = ExpressionWrapper(
        Coalesce(F("finished_at"), Now()) - F("started_at"), output_field=DurationField()
    )
    jobs = jobs_with_usage(jobs.annotate(run_duration=ran))
    field = F(order_field)
    order = field.desc(nulls_last=True) if descending else field.asc(nulls_last=True)
    return jobs.order_by(order, "-pk")


def jobs_for_page(*, user: AbstractBaseUser) -> QuerySet[Job]:
    """The jobs whose page the user may open, with what the page shows of each."""
    return jobs_user_may_operate(user=user).select_related(
        "project", "owner", "gpu_model", "spec", "code_version", "image", "template"
    )


def job_datasets(job: Job) -> list[Dataset]:
    return [row.dataset for row in job.jobdataset_set.select_related("dataset")]


def job_pretrained_models(job: Job) -> list[PretrainedModel]:
    rows = job.jobpretrainedmodel_set.select_related("pretrained_model")
    return [row.pretrained_model for row in rows]


def job_ran_unisolated(job: Job) -> bool:
    """Whether a node whose agent runs plain processes (TRAINYARD_UNSAFE_PLAIN_PROCESSES)
    holds one of the job's replicas."""
    return job.replica_set.filter(node__sandboxed=False).exists()


def job_events_in_order(job: Job) -> list[JobEvent]:
    return list(job.events.order_by("created_at", "pk"))


def first_replica_latest_attempt(job: Job) -> ReplicaAttempt | None:
    """Replica 0's latest attempt, with its job and node; None before the job started."""
    return (
        ReplicaAttempt.objects.filter(replica__job=job, replica__index=0)
        .select_related("replica__job", "node")
        .order_by("-number")
        .first()
    )


def personal_templates_for(*, user: AbstractBaseUser) -> QuerySet[PersonalTemplate]:
    return PersonalTemplate.objects.filter(owner=user)


def personal_template_links_for(*, user: AbstractBaseUser) -> QuerySet[PersonalTemplate]:
    """The user's templates as the New job page links them: the name alone, not the body."""
    return personal_templates_for(user=user).only("name")


def job_fair_share(job: Job) -> float | None:
    """A waiting job's owner's fair-share factor, as the scheduler's pass computes it."""
    return with_fair_shares([job])[0].fair_share


def with_fair_shares(jobs: list[Job]) -> list[Job]:
    """``jobs``, each with ``fair_share``: its owner's factor while it waits, else None.

    The users compared are those the pass compares (every waiting job's owner, and
    those with recent use); no query when none of ``jobs`` waits.
    """
    waiting = [job for job in jobs if job.state in Job.WAITING_STATES]
    factors = {}
    if waiting:
        # The owners, not a row per waiting job: pages poll this, and queues run to thousands.
        waiting_owners = Job.objects.filter(state__in=Job.WAITING_STATES).order_by()
        owners = set(waiting_owners.values_list("owner_id", flat=True).distinct())
        owners |= {job.owner_id for job in waiting}
        factors = fair_share_factors(user_ids=owners, now=timezone.now())
    for job in jobs:
        job.fair_share = factors.get(job.owner_id) if job.state in Job.WAITING_STATES else None
    return jobs
