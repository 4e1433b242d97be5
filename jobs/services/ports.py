"""The ports a job opens: the rules, and editing them after submit (seed 002: 设置后支持修改)."""

from __future__ import annotations

from django.contrib.auth.models import AbstractBaseUser
from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils.translation import gettext as _

from core.reasons import Reason
from jobs.models import Job, JobEvent, JobPort
from jobs.models.job import MAX_PORT, MAX_PORTS_PER_JOB, MIN_PORT


def port_errors(ports: list) -> list[str]:
    """Why ``ports`` may not be a job's ports; empty when they may."""
    errors = []
    if len(ports) > MAX_PORTS_PER_JOB:
        errors.append(
            _("At most %(max)s ports per job; you gave %(n)s")
            % {"max": MAX_PORTS_PER_JOB, "n": len(ports)}
        )
    seen: set[int] = set()
    for port in ports:
        if isinstance(port, bool) or not isinstance(port, int):
            errors.append(_("Port %(port)s is not a whole number") % {"port": port})
        elif port in seen:
            errors.append(_("Port %(port)s is listed twice") % {"port": port})
        elif not MIN_PORT <= port <= MAX_PORT:
            errors.append(
                _("Port %(port)s is out of range: ports must be between %(min)s and %(max)s")
                % {"port": port, "min": MIN_PORT, "max": MAX_PORT}
            )
        seen.add(port)
    return errors


def job_ports_update(*, job: Job, ports: list, actor: AbstractBaseUser) -> Job:
    """Replace the ports ``job`` opens, and record the change as an event.

    A waiting job opens the new ports when it starts. A running replica keeps
    the host ports it started with; its next attempt gets host ports for the
    new list when the scheduler places it.
    """
    errors = port_errors(ports)
    if errors:
        raise ValidationError({"ports": errors})
    with transaction.atomic():
        job = Job.objects.select_for_update().get(pk=job.pk)
        if job.is_finished:
            raise ValidationError(
                {"ports": [_("The job has finished; its ports can no longer change")]}
            )
        before = list(job.ports.values_list("port", flat=True))
        wanted = sorted(ports)
        if before != wanted:
            job.ports.exclude(port__in=wanted).delete()
            JobPort.objects.bulk_create(
                [JobPort(job=job, port=port) for port in wanted if port not in before]
            )
            changed = {
                "user": actor.get_username(),
                "before": ", ".join(map(str, before)) or "—",
                "after": ", ".join(map(str, wanted)) or "—",
            }
            JobEvent.build(
                job=job,
                from_state=job.state,
                to_state=job.state,
                reason=Reason("ports.changed", changed),
                data={"ports_before": before, "ports_after": wanted},
            ).save()
    return job
