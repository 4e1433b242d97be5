"""Reads of jobs and projects, scoped to what a user may see."""

from django.contrib.auth.models import AbstractBaseUser
from django.db.models import Q, QuerySet

from .models import Job, PortAllocation, Project


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
    the host port that publishes it, per replica (none once the job has released them)."""
    allocations = (
        PortAllocation.objects.filter(replica__job=job, job_port__isnull=False)
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
        }
        for row in allocations
    ]
