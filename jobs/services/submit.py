"""Submitting a job: the one validation path behind the form, the API and the CLI."""

from __future__ import annotations

from dataclasses import replace

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.utils.translation import gettext as _

from core.reasons import Reason
from jobs.estimates.expected import expected_seconds
from jobs.estimates.rules import template_errors
from jobs.lifecycle.pass_requests import schedule_soon
from jobs.models import Image, Job, JobDataset, JobEvent, JobPort, JobPretrainedModel

from .admission import request_admission
from .job_input import JobInput, job_input_resolve, usable_image
from .resources_input import RESOURCE_FIELDS, FieldErrors

RELATED_FIELDS = [field.name for field in Job._meta.concrete_fields if field.is_relation]


def job_submit(*, user: AbstractBaseUser, data: dict) -> Job:
    """Validate ``data`` (the API body's shape), create the job waiting for the scheduler.

    Raises ``ValidationError({field: [message]})``: bad input first; then, for
    input that is well formed, what the account may not use (billing) and
    what could never run (no node big enough, more than the whole quota).
    """
    job_input = job_input_resolve(user=user, data=data)
    _admission_errors(user, job_input).raise_if_any()
    with transaction.atomic():
        job_input = _image_as_added(job_input)
        job = _create(user, job_input)
        schedule_soon()
    return job


def _admission_errors(user: AbstractBaseUser, job_input: JobInput) -> FieldErrors:
    request = job_input.request
    # In spec mode the user chose none of the resource fields: the spec answers for them.
    rename = {f: "spec" for f in RESOURCE_FIELDS} if job_input.spec else {}
    errors = FieldErrors()
    admission = request_admission(user=user, request=request, preemptible=job_input.preemptible)
    errors.merge(admission.billing, rename)
    errors.merge(
        template_errors(user=user, template=job_input.template, gpu_model=request.gpu_model),
        rename,
    )
    errors.merge(
        {
            field: [_("Cannot run: %(why)s") % {"why": m} for m in ms]
            for field, ms in admission.feasibility.errors.items()
        },
        rename,
    )
    return errors


def _image_as_added(job_input: JobInput) -> JobInput:
    """An image still being added is read again, locked, in the job's transaction.

    ``image_add`` writes the image's outcome and the jobs waiting for it (their digest, or
    their failure) in one transaction: locked here, the new job is either among those it
    updates or sees the outcome, and takes the digest (or is refused) now.
    """
    image = job_input.image
    if image is None or image.state != Image.State.ADDING:
        return job_input
    image = Image.objects.select_for_update().get(pk=image.pk)
    errors = FieldErrors()
    usable_image(image, errors)
    errors.raise_if_any()
    return replace(job_input, image=image)


def _create(user: AbstractBaseUser, job_input: JobInput) -> Job:
    request = job_input.request
    job = Job(
        owner=user,
        project=job_input.project,
        name=job_input.name,
        task_mode=job_input.task_mode,
        replicas=request.replicas,
        config_mode=job_input.config_mode,
        spec=job_input.spec,
        resource_kind=request.kind,
        **request.columns(),
        command=job_input.command,
        template=job_input.template,
        augmentation_command=job_input.augmentation_command,
        code_version=job_input.code_version,
        image=job_input.image,
        image_digest=job_input.image.digest if job_input.image else "",
        max_runtime_minutes=job_input.max_runtime_minutes,
        max_retries=job_input.max_retries,
        priority=job_input.priority,
        preemptible=job_input.preemptible,
        keep_checkpoint=job_input.keep_checkpoint,
        state=Job.State.QUOTA_WAIT,
        **Job.reason_fields(Reason("queued")),
    )
    # Every related row was resolved from the input above, and the database's own
    # CHECK and foreign-key constraints refuse anything else: asking it again for each
    # (Django's full_clean would) costs a query apiece on every submission.
    job.clean_fields(exclude=RELATED_FIELDS)
    job.save()
    _as_read(
        job,
        jobdataset_set=JobDataset.objects.bulk_create(
            JobDataset(job=job, dataset=d, position=i)
            for i, d in enumerate(job_input.datasets, start=1)
        ),
        jobpretrainedmodel_set=JobPretrainedModel.objects.bulk_create(
            JobPretrainedModel(job=job, pretrained_model=m, position=i)
            for i, m in enumerate(job_input.pretrained_models, start=1)
        ),
        # Sorted by port (``job_input``), as the rows are ordered.
        ports=JobPort.objects.bulk_create(JobPort(job=job, port=p) for p in job_input.ports),
    )
    job.expected_seconds = expected_seconds(job)
    if job.expected_seconds is not None:
        Job.objects.filter(pk=job.pk).update(expected_seconds=job.expected_seconds)
    JobEvent.build(
        job=job, to_state=job.state, reason=Reason("submitted", {"user": user.get_username()})
    ).save()
    return job


def _as_read(job: Job, **rows: list) -> None:
    """Hold the rows just written as a prefetch would: whoever answers with the new job
    (the API) reads its datasets, models and ports from here, not from the database again.
    They are the rows in their models' order (position, port), so a read gives the same."""
    cache = job.__dict__.setdefault("_prefetched_objects_cache", {})
    for name, written in rows.items():
        queryset = getattr(job, name).all()
        queryset._result_cache, queryset._prefetch_done = list(written), True
        cache[name] = queryset
