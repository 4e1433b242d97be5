"""What a user is told about their jobs and free hours, and how they want to be told."""

from django.conf import settings
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models
from django.db.models import Q
from django.utils.translation import gettext_lazy as _

MIN_WAIT_MINUTES, MAX_WAIT_MINUTES = 1, 7 * 24 * 60
DEFAULT_WAIT_MINUTES = 30


class Kind(models.TextChoices):
    STARTED = "started", _("A job of yours starts running")
    SUCCEEDED = "succeeded", _("A job of yours succeeds")
    FAILED = "failed", _("A job of yours fails")
    TIMED_OUT = "timed_out", _("A job of yours times out")
    STOPPED = "stopped", _("A job of yours is stopped by someone else or by the platform")
    LONG_WAIT = "long_wait", _("A job of yours waits longer than your threshold")
    FREE_HOURS = "free_hours", _("Your free hours pass 80 % and 95 %")
    IDLE_CARDS = "idle_cards", _("A job of yours holds cards it does not use")


class Notification(models.Model):
    """One event told to one user: at most one row per event (``event_key``).

    The row is written even when the user wants neither channel for its kind,
    so that the event counts as handled; ``in_app`` says whether the list shows it.
    Title and body are built from ``kind`` and ``data`` when shown, in the reader's language.
    """

    class Email(models.TextChoices):
        OFF = "off", _("Not wanted")
        NO_ADDRESS = "no_address", _("No email address")
        PENDING = "pending", _("To be sent")
        SENT = "sent", _("Sent")

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.CASCADE,
        related_name="notifications",
        verbose_name=_("user"),
    )
    kind = models.CharField(_("kind"), max_length=16, choices=Kind.choices)
    event_key = models.CharField(_("event"), max_length=64)
    job = models.ForeignKey(
        "jobs.Job",
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="notifications",
        verbose_name=_("job"),
    )
    data = models.JSONField(_("details"), default=dict, blank=True)
    url = models.CharField(_("link"), max_length=200, blank=True)
    in_app = models.BooleanField(_("shown in the app"))
    email_status = models.CharField(_("email"), max_length=16, choices=Email.choices)
    created_at = models.DateTimeField(_("created"), auto_now_add=True)
    read_at = models.DateTimeField(_("read"), null=True, blank=True)
    emailed_at = models.DateTimeField(_("emailed"), null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-pk"]
        verbose_name = _("notification")
        verbose_name_plural = _("notifications")
        constraints = [
            # "Once per event": a repeated or concurrent task cannot write a second row.
            models.UniqueConstraint(
                fields=["user", "event_key"], name="notification_once_per_event"
            ),
            models.CheckConstraint(
                condition=Q(email_status="sent", emailed_at__isnull=False)
                | (~Q(email_status="sent") & Q(emailed_at__isnull=True)),
                name="notification_emailed_at_iff_sent",
            ),
        ]
        indexes = [
            models.Index(fields=["user", "-created_at"], name="notification_user_idx"),
            # The navigation's unread count reads only this.
            models.Index(
                fields=["user"],
                condition=Q(in_app=True, read_at__isnull=True),
                name="notification_unread_idx",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.user_id}: {self.event_key}"


class NotificationSettings(models.Model):
    """Which kinds a user hears of, in the app and by email; no row means the defaults.

    Defaults: everything in the app; email for the ends a person acts on (succeeded,
    failed, timed out, stopped by someone else) and for the free hours, not for a
    start or a long wait, which come often and rarely need an answer.
    """

    user = models.OneToOneField(
        settings.AUTH_USER_MODEL,
        on_delete=models.CASCADE,
        related_name="notification_settings",
        verbose_name=_("user"),
    )
    started_in_app = models.BooleanField(default=True)
    started_email = models.BooleanField(default=False)
    succeeded_in_app = models.BooleanField(default=True)
    succeeded_email = models.BooleanField(default=True)
    failed_in_app = models.BooleanField(default=True)
    failed_email = models.BooleanField(default=True)
    timed_out_in_app = models.BooleanField(default=True)
    timed_out_email = models.BooleanField(default=True)
    stopped_in_app = models.BooleanField(default=True)
    stopped_email = models.BooleanField(default=True)
    long_wait_in_app = models.BooleanField(default=True)
    long_wait_email = models.BooleanField(default=False)
    free_hours_in_app = models.BooleanField(default=True)
    free_hours_email = models.BooleanField(default=True)
    idle_cards_in_app = models.BooleanField(default=True)
    idle_cards_email = models.BooleanField(default=True)
    long_wait_minutes = models.PositiveIntegerField(
        _("Long wait threshold (minutes)"),
        default=DEFAULT_WAIT_MINUTES,
        validators=[
            MinValueValidator(
                MIN_WAIT_MINUTES,
                _("The long wait threshold must be at least %(limit_value)s minute"),
            ),
            MaxValueValidator(
                MAX_WAIT_MINUTES,
                _("The long wait threshold must be at most %(limit_value)s minutes (a week)"),
            ),
        ],
        help_text=_("Tell me when a job has waited this long without starting."),
    )
    language = models.CharField(
        _("Email language"), max_length=8, choices=settings.LANGUAGES, default="en"
    )
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        verbose_name = _("notification settings")
        verbose_name_plural = _("notification settings")
        constraints = [
            models.CheckConstraint(
                condition=Q(long_wait_minutes__gte=MIN_WAIT_MINUTES)
                & Q(long_wait_minutes__lte=MAX_WAIT_MINUTES),
                name="notification_wait_minutes_in_range",
            )
        ]

    def __str__(self) -> str:
        return str(self.user)

    def wants(self, kind: str) -> tuple[bool, bool]:
        """(in the app, by email) for ``kind``."""
        return getattr(self, f"{kind}_in_app"), getattr(self, f"{kind}_email")
