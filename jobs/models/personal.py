"""A user's own templates: jobs saved to submit again with changes."""

from django.conf import settings
from django.db import models
from django.utils.translation import gettext_lazy as _


class PersonalTemplate(models.Model):
    """A saved submit body (``POST /api/v1/jobs``); the New job form opens filled with it.

    It keeps the body, not a link to the job: the template stays what was saved
    when the job's project data or the job itself go away.
    """

    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.CASCADE,
        related_name="personal_templates",
        verbose_name=_("owner"),
    )
    name = models.CharField(_("name"), max_length=128)
    body = models.JSONField(_("submit body"))
    source_job = models.ForeignKey(
        "jobs.Job",
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="+",
        verbose_name=_("saved from job"),
    )
    updated_at = models.DateTimeField(_("updated"), auto_now=True)

    class Meta:
        ordering = ["name"]
        verbose_name = _("personal template")
        verbose_name_plural = _("personal templates")
        constraints = [
            models.UniqueConstraint(fields=["owner", "name"], name="personal_template_name_once"),
        ]

    def __str__(self) -> str:
        return self.name
