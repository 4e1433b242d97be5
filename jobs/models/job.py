"""The job: what was asked for, and what has happened to it."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.db.models.functions import Length
from django.utils.translation import gettext_lazy as _

from core.reasons import Reason, reason_text
from resources.models import MIN_STORAGE_GIB, ReplicaResourceColumns, ResourceKind, Spec

MAX_COMMAND_CHARS = 10_000
MAX_PORTS_PER_JOB = 10
MIN_PORT, MAX_PORT = 1025, 65535
MAX_RETRIES = 10

models.CharField.register_lookup(Length)
models.TextField.register_lookup(Length)


class Job(ReplicaResourceColumns):
    class TaskMode(models.TextChoices):
        SINGLE = "single", _("Single machine")
        DISTRIBUTED = "distributed", _("Distributed")

    class ConfigMode(models.TextChoices):
        PARAMETER = "parameter", _("Parameters")
        SPEC = "spec", _("Spec")

    class Priority(models.IntegerChoices):
        NORMAL = 0, _("Normal")
        HIGH = 10, _("High")

    class State(models.TextChoices):
        QUOTA_WAIT = "quota_wait", _("Waiting for quota")
        RESOURCE_WAIT = "resource_wait", _("Waiting for resources")
        STARTING = "starting", _("Starting")
        RUNNING = "running", _("Running")
        SUCCEEDED = "succeeded", _("Succeeded")
        FAILED = "failed", _("Failed")
        STOPPED = "stopped", _("Stopped")
        TIMED_OUT = "timed_out", _("Timed out")

    WAITING_STATES = (State.QUOTA_WAIT, State.RESOURCE_WAIT)
    ACTIVE_STATES = (State.STARTING, State.RUNNING)
    FINAL_STATES = (State.SUCCEEDED, State.FAILED, State.STOPPED, State.TIMED_OUT)

    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.PROTECT,
        related_name="jobs",
        verbose_name=_("owner"),
    )
    project = models.ForeignKey(
        "jobs.Project", on_delete=models.PROTECT, related_name="jobs", verbose_name=_("project")
    )
    name = models.CharField(_("name"), max_length=128)
    task_mode = models.CharField(
        _("task mode"), max_length=16, choices=TaskMode.choices, default=TaskMode.SINGLE
    )
    replicas = models.PositiveSmallIntegerField(_("replicas (nodes)"), default=1)
    config_mode = models.CharField(
        _("config mode"), max_length=16, choices=ConfigMode.choices, default=ConfigMode.PARAMETER
    )
    spec = models.ForeignKey(
        Spec, on_delete=models.PROTECT, null=True, blank=True, verbose_name=_("spec")
    )
    template = models.ForeignKey(
        "jobs.WorkloadTemplate",
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        verbose_name=_("workload template"),
    )

    # The request of one replica: this kind, and the columns of ``ReplicaResourceColumns``.
    resource_kind = models.CharField(_("resource kind"), max_length=8, choices=ResourceKind.choices)

    command = models.TextField(_("startup command"))
    augmentation_command = models.TextField(_("augmentation-search command"), blank=True)
    datasets = models.ManyToManyField(
        "jobs.Dataset", through="jobs.JobDataset", blank=True, verbose_name=_("datasets")
    )
    pretrained_models = models.ManyToManyField(
        "jobs.PretrainedModel",
        through="jobs.JobPretrainedModel",
        blank=True,
        verbose_name=_("pretrained models"),
    )
    code_version = models.ForeignKey(
        "jobs.CodeVersion",
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        verbose_name=_("code version"),
    )
    image = models.ForeignKey(
        "jobs.Image", on_delete=models.PROTECT, null=True, blank=True, verbose_name=_("image")
    )
    # The image's manifest digest when the job was submitted: what every attempt runs in,
    # whatever later happens to the image's name. Empty: the node's own system.
    image_digest = models.CharField(_("image digest"), max_length=71, blank=True)
    max_runtime_minutes = models.PositiveIntegerField(
        _("max run time (minutes)"), null=True, blank=True
    )
    # How long the job will likely run (``jobs.estimates.expected``), set at submit;
    # the scheduler's start forecast uses it in place of the max run time.
    expected_seconds = models.PositiveIntegerField(
        _("expected run time (s)"), null=True, blank=True
    )
    max_retries = models.PositiveSmallIntegerField(_("replica retries"), default=0)
    priority = models.SmallIntegerField(_("priority"), choices=Priority.choices, default=0)
    # Borrowing and preemption (jobs/scheduler/preemption.py): a preemptible job beyond its
    # owner's quota may start on cards no within-quota job waits for; it is then borrowing, and
    # a within-quota job that needs those cards may preempt it.
    preemptible = models.BooleanField(
        _("preemptible"),
        default=False,
        help_text=_(
            "May start beyond your quota on idle cards, and be stopped and requeued when a "
            "job within its quota needs them."
        ),
    )
    borrowed = models.BooleanField(_("borrowing idle quota"), default=False)
    # The owner's choice: once the job has ended the agents leave its checkpoints
    # (``TRAINYARD_CHECKPOINT``) in place, and the job's page lists them beside its outputs.
    keep_checkpoint = models.BooleanField(
        _("keep the checkpoint"),
        default=False,
        help_text=_(
            "Once the job has ended, its checkpoint stays and downloads beside its outputs."
        ),
    )
    preempted_for = models.ForeignKey(
        "self",
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="+",
        verbose_name=_("preempted for"),
    )
    preempt_requested_at = models.DateTimeField(_("preemption requested"), null=True, blank=True)

    state = models.CharField(
        _("state"), max_length=16, choices=State.choices, default=State.QUOTA_WAIT, db_index=True
    )
    # In English (searches, old readers); pages and the API render the code in their language.
    state_reason = models.TextField(_("reason"), blank=True)
    state_reason_code = models.CharField(_("reason code"), max_length=32, blank=True)
    state_reason_params = models.JSONField(_("reason parameters"), default=dict, blank=True)
    queue_position = models.PositiveIntegerField(_("queue position"), null=True, blank=True)
    estimated_start = models.DateTimeField(_("expected start"), null=True, blank=True)
    attempt = models.PositiveSmallIntegerField(
        _("attempt"), default=0, help_text=_("Current attempt of the whole job (1-based).")
    )
    submitted_at = models.DateTimeField(_("submitted"), auto_now_add=True, db_index=True)
    # Its place among its owner's waiting jobs when they reordered them (the Queue page):
    # the queue orders by this, else the submit time (jobs/scheduler/queue.py).
    queue_since = models.DateTimeField(_("in the queue since"), null=True, blank=True)
    started_at = models.DateTimeField(_("started"), null=True, blank=True)
    finished_at = models.DateTimeField(_("finished"), null=True, blank=True)
    stop_requested_at = models.DateTimeField(_("stop requested"), null=True, blank=True)
    # Set while its cards sit idle (jobs/idle_cards.py): when its owner was told, at what use.
    idle_since = models.DateTimeField(_("cards idle since"), null=True, blank=True)
    idle_gpu_percent = models.FloatField(_("idle cards' GPU use (%)"), null=True, blank=True)

    class Meta:
        ordering = ["-submitted_at"]
        verbose_name = _("job")
        verbose_name_plural = _("jobs")
        indexes = [
            models.Index(fields=["state", "-priority", "submitted_at"], name="job_queue_idx"),
            models.Index(fields=["owner", "-submitted_at"], name="job_owner_idx"),
            # And job_owner_command_idx, (owner, md5(command)) on PostgreSQL: made by
            # migration 0019 alone, for it differs per database.
        ]
        constraints = [
            models.CheckConstraint(
                condition=Q(task_mode="single", replicas=1)
                | Q(task_mode="distributed", replicas__gte=2),
                name="job_replicas_match_mode",
            ),
            models.CheckConstraint(
                condition=Q(resource_kind="cpu", gpu_model__isnull=True, gpu_count=0)
                | Q(resource_kind__in=["gpu", "vgpu"], gpu_model__isnull=False, gpu_count__gte=1),
                name="job_gpu_fields_match_kind",
            ),
            models.CheckConstraint(
                condition=Q(
                    resource_kind="vgpu",
                    vgpu_compute_percent__gte=1,
                    vgpu_compute_percent__lte=100,
                    vgpu_memory_mib__gte=1,
                )
                | (~Q(resource_kind="vgpu") & Q(vgpu_compute_percent__isnull=True)),
                name="job_vgpu_compute_1_100",
            ),
            models.CheckConstraint(condition=Q(cpu_milli__gt=0), name="job_cpu_gt_0"),
            models.CheckConstraint(condition=Q(memory_mib__gt=0), name="job_memory_gt_0"),
            models.CheckConstraint(
                condition=Q(storage_gib__gte=MIN_STORAGE_GIB), name="job_storage_gte_2"
            ),
            models.CheckConstraint(
                condition=Q(max_retries__lte=MAX_RETRIES), name="job_max_retries_lte_10"
            ),
            models.CheckConstraint(
                condition=Q(command__length__lte=MAX_COMMAND_CHARS), name="job_command_lte_10000"
            ),
            models.CheckConstraint(
                condition=Q(max_runtime_minutes__isnull=True) | Q(max_runtime_minutes__gte=1),
                name="job_max_runtime_gte_1",
            ),
            models.CheckConstraint(
                condition=Q(config_mode="parameter") | Q(spec__isnull=False),
                name="job_spec_mode_has_spec",
            ),
        ]

    def __str__(self) -> str:
        return f"#{self.pk} {self.name}"

    @property
    def reason_text(self) -> str:
        """The state reason in the active language (the stored English without a code)."""
        return reason_text(self.state_reason_code, self.state_reason_params, self.state_reason)

    @staticmethod
    def reason_fields(reason: Reason) -> dict:
        """The columns that store ``reason``."""
        return {
            "state_reason": reason.english,
            "state_reason_code": reason.code,
            "state_reason_params": reason.json_params,
        }

    @property
    def is_waiting(self) -> bool:
        return self.state in self.WAITING_STATES

    @property
    def before_start(self) -> bool:
        """Waiting in Trainyard's queue, or starting (inside Slurm's, for a job it places)."""
        return self.is_waiting or self.state == self.State.STARTING

    @property
    def is_active(self) -> bool:
        return self.state in self.ACTIVE_STATES

    @property
    def is_finished(self) -> bool:
        return self.state in self.FINAL_STATES


class JobDataset(models.Model):
    """A dataset mounted at ``/trainyard/data-<position>``."""

    job = models.ForeignKey(Job, on_delete=models.CASCADE)
    dataset = models.ForeignKey("jobs.Dataset", on_delete=models.PROTECT)
    position = models.PositiveSmallIntegerField()

    class Meta:
        verbose_name = _("job dataset")
        verbose_name_plural = _("job datasets")
        ordering = ["job", "position"]
        constraints = [
            models.UniqueConstraint(fields=["job", "position"], name="job_dataset_position"),
            models.UniqueConstraint(fields=["job", "dataset"], name="job_dataset_once"),
            models.CheckConstraint(condition=Q(position__gte=1), name="job_dataset_position_gte_1"),
        ]


class JobPretrainedModel(models.Model):
    """A pretrained model mounted at ``/trainyard/pretrained-<position>``."""

    job = models.ForeignKey(Job, on_delete=models.CASCADE)
    pretrained_model = models.ForeignKey("jobs.PretrainedModel", on_delete=models.PROTECT)
    position = models.PositiveSmallIntegerField()

    class Meta:
        verbose_name = _("job pretrained model")
        verbose_name_plural = _("job pretrained models")
        ordering = ["job", "position"]
        constraints = [
            models.UniqueConstraint(fields=["job", "position"], name="job_pretrained_position"),
            models.UniqueConstraint(fields=["job", "pretrained_model"], name="job_pretrained_once"),
            models.CheckConstraint(
                condition=Q(position__gte=1), name="job_pretrained_position_gte_1"
            ),
        ]


class JobPort(models.Model):
    """A port the job opens; each replica gets a host port for it from the pool."""

    job = models.ForeignKey(Job, on_delete=models.CASCADE, related_name="ports")
    port = models.PositiveIntegerField(_("port"))

    class Meta:
        verbose_name = _("job port")
        verbose_name_plural = _("job ports")
        ordering = ["job", "port"]
        constraints = [
            models.UniqueConstraint(fields=["job", "port"], name="job_port_unique"),
            models.CheckConstraint(
                condition=Q(port__gte=MIN_PORT, port__lte=MAX_PORT), name="job_port_in_range"
            ),
        ]

    def __str__(self) -> str:
        return str(self.port)


class JobEvent(models.Model):
    """One transition or notable moment of a job, with a reason a person can read."""

    job = models.ForeignKey(Job, on_delete=models.CASCADE, related_name="events")
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)
    from_state = models.CharField(max_length=16, blank=True)
    to_state = models.CharField(max_length=16, blank=True)
    reason = models.TextField()  # in English; ``text`` is in the reader's language
    reason_code = models.CharField(max_length=32, blank=True)
    reason_params = models.JSONField(default=dict, blank=True)
    data = models.JSONField(default=dict, blank=True)

    class Meta:
        ordering = ["job", "created_at", "pk"]
        verbose_name = _("job event")
        verbose_name_plural = _("job events")

    def __str__(self) -> str:
        return f"{self.job_id}: {self.from_state}→{self.to_state} {self.text}"

    @property
    def text(self) -> str:
        """The reason in the active language (the stored English for a row without a code)."""
        return reason_text(self.reason_code, self.reason_params, self.reason)

    @classmethod
    def build(cls, *, reason: Reason, **fields) -> JobEvent:
        """An unsaved event with ``reason``'s code, parameters and English text."""
        return cls(
            reason=reason.english,
            reason_code=reason.code,
            reason_params=reason.json_params,
            **fields,
        )
