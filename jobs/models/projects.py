"""Projects and what a job takes from them: data, models and code (images: ``images.py``)."""

from django.conf import settings
from django.db import models
from django.utils.translation import gettext_lazy as _


class Project(models.Model):
    name = models.CharField(_("name"), max_length=128, unique=True)
    description = models.TextField(_("description"), blank=True)
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.PROTECT,
        related_name="owned_projects",
        verbose_name=_("owner"),
    )
    members = models.ManyToManyField(
        settings.AUTH_USER_MODEL, blank=True, related_name="projects", verbose_name=_("members")
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]
        verbose_name = _("project")
        verbose_name_plural = _("projects")

    def __str__(self) -> str:
        return self.name


class ProjectItem(models.Model):
    """Something a project holds on disk, by name, under the platform's data root."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, verbose_name=_("project"))
    name = models.CharField(_("name"), max_length=128)
    path = models.CharField(
        _("path"), max_length=512, help_text=_("Relative to the platform's data root.")
    )

    class Meta:
        abstract = True
        ordering = ["project", "name"]

    def __str__(self) -> str:
        return self.name


class Dataset(ProjectItem):
    size_samples = models.PositiveIntegerField(
        _("size (samples)"), default=0, help_text=_("Number of samples; used by estimates.")
    )

    class Meta(ProjectItem.Meta):
        default_related_name = "datasets"
        verbose_name = _("dataset")
        verbose_name_plural = _("datasets")
        constraints = [
            models.UniqueConstraint(fields=["project", "name"], name="dataset_unique_name")
        ]


class PretrainedModel(ProjectItem):
    class Meta(ProjectItem.Meta):
        default_related_name = "pretrained_models"
        verbose_name = _("pretrained model")
        verbose_name_plural = _("pretrained models")
        constraints = [
            models.UniqueConstraint(fields=["project", "name"], name="pretrained_unique_name")
        ]


class CodeVersion(ProjectItem):
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta(ProjectItem.Meta):
        default_related_name = "code_versions"
        ordering = ["project", "-created_at"]
        verbose_name = _("code version")
        verbose_name_plural = _("code versions")
        constraints = [
            models.UniqueConstraint(fields=["project", "name"], name="code_version_unique_name")
        ]
