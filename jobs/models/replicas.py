"""Replicas of a job, each attempt at running one, and the host ports they hold."""

from django.db import models
from django.db.models import Q
from django.utils.translation import gettext_lazy as _

from core.reasons import Reason, reason_text

from .job import MAX_PORT, MIN_PORT


class Replica(models.Model):
    """One replica of a job (one per node for distributed jobs)."""

    job = models.ForeignKey("jobs.Job", on_delete=models.CASCADE, related_name="replica_set")
    index = models.PositiveSmallIntegerField(_("index"))
    node = models.ForeignKey(
        "resources.Node",
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        related_name="replicas",
        verbose_name=_("node"),
    )
    card_indices = models.JSONField(_("card indices"), default=list, blank=True)
    # The GPU model a replica Slurm places was submitted for (of a ``*`` model, the member
    # Trainyard chose when it admitted the job): what its quota is charged to until Slurm
    # starts it on a node. None for a replica Trainyard placed.
    slurm_model = models.ForeignKey(
        "resources.GpuModel",
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        related_name="+",
        verbose_name=_("GPU model submitted to Slurm"),
    )

    class Meta:
        ordering = ["job", "index"]
        verbose_name = _("replica")
        verbose_name_plural = _("replicas")
        constraints = [
            models.UniqueConstraint(fields=["job", "index"], name="replica_unique_index"),
        ]

    def __str__(self) -> str:
        return f"job {self.job_id} replica {self.index}"


class ReplicaAttempt(models.Model):
    """One run of a replica; the unit of execution, logs and billing."""

    class State(models.TextChoices):
        PENDING = "pending", _("Pending")
        RUNNING = "running", _("Running")
        SUCCEEDED = "succeeded", _("Succeeded")
        FAILED = "failed", _("Failed")
        STOPPED = "stopped", _("Stopped")
        TIMED_OUT = "timed_out", _("Timed out")
        LOST = "lost", _("Lost")

    FINAL_STATES = (State.SUCCEEDED, State.FAILED, State.STOPPED, State.TIMED_OUT, State.LOST)

    class Phase(models.TextChoices):
        AUGMENTATION = "augmentation", _("Augmentation search")
        TRAINING = "training", _("Training")

    replica = models.ForeignKey(Replica, on_delete=models.CASCADE, related_name="attempts")
    number = models.PositiveSmallIntegerField(_("attempt"))
    # None while Slurm has yet to place it (``jobs/scheduler/lookahead.py``): Slurm's node
    # is recorded when it starts there.
    node = models.ForeignKey(
        "resources.Node",
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        related_name="attempts",
        verbose_name=_("node"),
    )
    state = models.CharField(
        _("state"), max_length=16, choices=State.choices, default=State.PENDING, db_index=True
    )
    phase = models.CharField(
        _("phase"), max_length=16, choices=Phase.choices, default=Phase.TRAINING
    )
    pid = models.PositiveIntegerField(null=True, blank=True)
    external_id = models.CharField(
        _("executor job id"), max_length=64, blank=True, help_text=_("e.g. the Slurm job id")
    )
    exit_code = models.IntegerField(_("exit code"), null=True, blank=True)
    reason = models.TextField(_("reason"), blank=True)  # in English; see ``reason_text``
    reason_code = models.CharField(_("reason code"), max_length=32, blank=True)
    reason_params = models.JSONField(_("reason parameters"), default=dict, blank=True)
    platform_fault = models.BooleanField(
        _("lost to the platform"), default=False, help_text=_("Not billed: node or agent failure.")
    )
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(_("started"), null=True, blank=True)
    training_started_at = models.DateTimeField(_("training started"), null=True, blank=True)
    ended_at = models.DateTimeField(_("ended"), null=True, blank=True)
    deadline = models.DateTimeField(_("deadline"), null=True, blank=True)
    log_offset = models.PositiveBigIntegerField(default=0)
    # The replica's own address in its host's job network (its gang reaches it there).
    address = models.GenericIPAddressField(_("job address"), protocol="IPv4", null=True, blank=True)

    class Meta:
        ordering = ["replica", "number"]
        verbose_name = _("replica attempt")
        verbose_name_plural = _("replica attempts")
        indexes = [models.Index(fields=["state", "node"], name="attempt_state_node_idx")]
        constraints = [
            models.UniqueConstraint(fields=["replica", "number"], name="attempt_unique_number"),
            models.CheckConstraint(condition=Q(number__gte=1), name="attempt_number_gte_1"),
            models.CheckConstraint(
                condition=Q(ended_at__isnull=True)
                | Q(started_at__isnull=True)
                | Q(ended_at__gte=models.F("started_at")),
                name="attempt_ends_after_start",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.replica} attempt {self.number}"

    @property
    def where(self) -> str:
        """Its node's name, or that Slurm has yet to place it (or never did: it ended first)."""
        if self.node is not None:
            return self.node.name
        if self.state in self.FINAL_STATES:
            return str(_("Slurm, never placed"))
        return str(_("Slurm, not placed yet"))

    @property
    def reason_text(self) -> str:
        """Why it ended, in the active language (the stored English without a code)."""
        return reason_text(self.reason_code, self.reason_params, self.reason)

    @property
    def reason_value(self) -> Reason:
        """Why it ended, to nest in the job's reason."""
        if self.reason_code:
            return Reason.of({"code": self.reason_code, "params": self.reason_params})
        return Reason.of(self.reason)

    @staticmethod
    def reason_fields(reason: Reason) -> dict:
        """The columns that store ``reason``."""
        return {
            "reason": reason.english,
            "reason_code": reason.code,
            "reason_params": reason.json_params,
        }


class PortAllocation(models.Model):
    """A host port from the platform pool held by a replica.

    ``job_port`` is the port the job asked for; empty for the rendezvous port
    (``MASTER_PORT``) of a distributed job.
    """

    replica = models.ForeignKey(Replica, on_delete=models.CASCADE, related_name="ports")
    job_port = models.PositiveIntegerField(null=True, blank=True)
    host_port = models.PositiveIntegerField(unique=True)

    class Meta:
        verbose_name = _("port allocation")
        verbose_name_plural = _("port allocations")
        ordering = ["replica", "job_port"]
        constraints = [
            models.CheckConstraint(
                condition=Q(host_port__gte=MIN_PORT, host_port__lte=MAX_PORT),
                name="port_allocation_host_in_range",
            ),
            models.CheckConstraint(
                condition=Q(job_port__isnull=True)
                | Q(job_port__gte=MIN_PORT, job_port__lte=MAX_PORT),
                name="port_allocation_job_port_in_range",
            ),
            models.UniqueConstraint(
                fields=["replica", "job_port"], name="port_allocation_unique_job_port"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.job_port or 'rendezvous'} → {self.host_port}"
