"""The site's settings: one row, read with ``SiteSettings.load()``."""

from django.db import models
from django.db.models import F, Q
from django.utils.translation import gettext_lazy as _


class SiteSettings(models.Model):
    """The site-wide switches an admin sets; a singleton (pk 1)."""

    spec_management_enabled = models.BooleanField(_("spec management enabled"), default=False)
    max_nodes_per_job = models.PositiveSmallIntegerField(_("max nodes per job"), default=6)
    free_grant_card_hours = models.DecimalField(
        _("free grant (card-hours)"), max_digits=10, decimal_places=2, default=100
    )
    port_pool_start = models.PositiveIntegerField(_("first host port of the pool"), default=40000)
    port_pool_size = models.PositiveIntegerField(_("host ports in the pool"), default=19500)
    stop_grace_seconds = models.PositiveIntegerField(_("stop grace period (s)"), default=30)
    preempt_grace_seconds = models.PositiveIntegerField(
        _("preemption grace period (s)"),
        default=60,
        help_text=_("Between TERM and KILL when a borrowing job is preempted: time to checkpoint."),
    )
    heartbeat_timeout_seconds = models.PositiveIntegerField(
        _("node heartbeat timeout (s)"), default=60
    )
    # Fair share (billing/fair_share.py): how fast a user's past use stops counting.
    fair_share_half_life_days = models.PositiveSmallIntegerField(
        _("fair-share half-life (days)"),
        default=7,
        help_text=_("After this long a card-hour counts half in the queue's fair share."),
    )
    # Idle cards (jobs/idle_cards.py): a running job whose cards average below the threshold
    # over the window, counted from some minutes into its training, is told; optionally
    # stopped if it stays so.
    idle_gpu_percent = models.PositiveSmallIntegerField(
        _("idle cards threshold (%)"),
        default=5,
        help_text=_("A job whose cards average below this GPU use over the window is idle."),
    )
    idle_window_minutes = models.PositiveIntegerField(_("idle window (minutes)"), default=30)
    idle_grace_minutes = models.PositiveIntegerField(
        _("idle check from (minutes of training)"),
        default=10,
        help_text=_("Not counted: the augmentation phase and this many minutes of training."),
    )
    idle_stop_minutes = models.PositiveIntegerField(
        _("stop idle jobs after (minutes)"),
        null=True,
        blank=True,
        help_text=_("Empty: never. Else a job still idle this long after its owner was told."),
    )
    # Kept by the heartbeat check itself (jobs/execution/nodes.py): since when it has been
    # watching without a gap, and when it last looked. Not for admins to set.
    heartbeat_watch_since = models.DateTimeField(null=True, blank=True, editable=False)
    heartbeat_checked_at = models.DateTimeField(null=True, blank=True, editable=False)

    class Meta:
        verbose_name = _("site settings")
        verbose_name_plural = _("site settings")
        constraints = [
            models.CheckConstraint(condition=Q(pk=1), name="site_settings_singleton"),
            models.CheckConstraint(
                condition=Q(fair_share_half_life_days__gte=1),
                name="site_settings_half_life_gte_1",
                violation_error_message=_("The fair-share half-life is at least 1 day."),
            ),
            models.CheckConstraint(
                condition=Q(idle_gpu_percent__lte=100) & Q(idle_window_minutes__gte=1),
                name="site_settings_idle_in_range",
                violation_error_message=_(
                    "The idle cards threshold is at most 100 % and its window at least 1 minute."
                ),
            ),
            models.CheckConstraint(
                condition=Q(max_nodes_per_job__gte=2),
                name="site_settings_max_nodes_gte_2",
                violation_error_message=_("Max nodes per job is at least 2."),
            ),
            models.CheckConstraint(
                condition=Q(port_pool_start__gte=1025)
                & Q(port_pool_size__gte=1)
                & Q(port_pool_start__lte=65536 - F("port_pool_size")),
                name="site_settings_port_pool_in_range",
                violation_error_message=_(
                    "The port pool starts at 1025 or above, holds at least 1 port "
                    "and ends at 65535 or below."
                ),
            ),
        ]

    def __str__(self) -> str:
        return str(_("Site settings"))

    @classmethod
    def load(cls) -> "SiteSettings":
        obj, _created = cls.objects.get_or_create(pk=1)
        return obj
