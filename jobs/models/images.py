"""A project's work images: OCI images in the site's image store, by manifest digest.

An image row with a digest is an OCI image the nodes unpack and run the job in
(``jobs/execution/replica/image_cache.py``); admins add one from a registry
reference, an uploaded archive or a Containerfile (``jobs/images/``). A row
without a digest names the node's own system: a job on it runs on the host's
root, as every job did before images, and only where the site allows it
(``TRAINYARD_HOST_SYSTEM_JOBS``).
"""

from django.db import models
from django.db.models import Q
from django.utils.translation import gettext_lazy as _

from .projects import Project

DIGEST_LENGTH = len("sha256:") + 64


class Image(models.Model):
    class State(models.TextChoices):
        READY = "ready", _("ready")
        ADDING = "adding", _("being added")
        FAILED = "failed", _("failed")

    class Source(models.TextChoices):
        HOST = "host", _("the node's own system")
        REGISTRY = "registry", _("registry reference")
        ARCHIVE = "archive", _("uploaded archive")
        CONTAINERFILE = "containerfile", _("Containerfile")
        RECIPE = "recipe", _("built-in recipe")

    project = models.ForeignKey(
        Project, on_delete=models.CASCADE, related_name="images", verbose_name=_("project")
    )
    name = models.CharField(_("name"), max_length=255)
    is_default = models.BooleanField(_("project default"), default=False)
    source = models.CharField(
        _("source"), max_length=16, choices=Source.choices, default=Source.HOST
    )
    # The registry reference, the archive's file name, the Containerfile or the recipe's key.
    source_detail = models.TextField(_("source detail"), blank=True)
    state = models.CharField(_("state"), max_length=8, choices=State.choices, default=State.READY)
    problem = models.TextField(_("problem"), blank=True)
    digest = models.CharField(_("manifest digest"), max_length=DIGEST_LENGTH, blank=True)
    size_bytes = models.BigIntegerField(_("size (bytes)"), null=True, blank=True)
    # [{"digest": ..., "size": ...}] in the manifest's order, the base layer first.
    layers = models.JSONField(_("layers"), default=list, blank=True)
    python_version = models.CharField(_("Python version"), max_length=32, blank=True)
    cuda_version = models.CharField(_("CUDA version"), max_length=32, blank=True)
    torch_version = models.CharField(_("PyTorch version"), max_length=32, blank=True)
    created_at = models.DateTimeField(_("added at"), auto_now_add=True, null=True)

    class Meta:
        ordering = ["project", "-is_default", "name"]
        verbose_name = _("image")
        verbose_name_plural = _("images")
        constraints = [
            models.UniqueConstraint(fields=["project", "name"], name="image_unique_name"),
            models.UniqueConstraint(
                fields=["project"], condition=Q(is_default=True), name="image_one_default"
            ),
            models.CheckConstraint(
                condition=Q(digest="") | Q(digest__regex=r"^sha256:[0-9a-f]{64}$"),
                name="image_digest_sha256",
                violation_error_message=_("A digest is sha256: and 64 hexadecimal digits."),
            ),
            models.CheckConstraint(
                condition=~Q(state="ready") | Q(source="host") | ~Q(digest=""),
                name="image_ready_has_digest",
                violation_error_message=_("An image is ready only once it has a digest."),
            ),
        ]

    def __str__(self) -> str:
        return self.name

    @property
    def is_host_system(self) -> bool:
        """Jobs on it run on the node's own root filesystem, not in an image."""
        return self.source == self.Source.HOST

    @property
    def contents(self) -> list[str]:
        """What was found in it: ``["Python 3.11.2", "PyTorch 2.13.0+cpu"]``, CUDA last."""
        found = [("Python", self.python_version), ("PyTorch", self.torch_version)]
        found.append(("CUDA", self.cuda_version))
        return [f"{name} {version}" for name, version in found if version]
