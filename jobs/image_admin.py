"""The admin's images: add one (registry, archive, Containerfile, recipe); see what it holds.

Adding queues ``jobs.tasks.image_add`` (``jobs/images/add.py``) on commit and
the row shows "being added" until the image is in the store; its page then
shows its digest, size, layers, the Python, CUDA and PyTorch found in it, and
the jobs that use it. What made an image cannot be edited afterwards: a new
image is a new row (jobs keep the digest they were submitted with).
"""

from __future__ import annotations

from django import forms
from django.contrib import admin
from django.db import transaction
from django.db.models import Count
from django.urls import reverse
from django.utils.html import format_html, format_html_join
from django.utils.safestring import mark_safe
from django.utils.text import format_lazy
from django.utils.translation import gettext_lazy as _

from core.task_names import send_task

from .images.add import incoming_archive, registry_reference_problem
from .images.demo_recipes import DEMO_RECIPES
from .models import Image

MB = 1000 * 1000


class ImageAddForm(forms.ModelForm):
    archive = forms.FileField(
        label=_("Archive"),
        required=False,
        help_text=_("An OCI image archive, or what `docker save` writes (a .tar)."),
    )

    class Meta:
        model = Image
        fields = ["project", "name", "is_default", "source", "source_detail"]
        help_texts = {
            "source_detail": format_lazy(
                _(
                    "Registry: a reference such as registry.example.org:5000/team/pytorch:2.13. "
                    "Containerfile: its text; FROM names another ready image of the project. "
                    "Built-in recipe: {recipes}."
                ),
                recipes=", ".join(recipe.key for recipe in DEMO_RECIPES),
            ),
        }

    def clean(self):
        data = super().clean()
        source, detail = data.get("source"), (data.get("source_detail") or "").strip()
        Source = Image.Source
        if source == Source.REGISTRY and registry_reference_problem(detail):
            self.add_error(
                "source_detail",
                _("Not a registry reference such as registry.example.org:5000/team/pytorch:2.13."),
            )
        if source == Source.ARCHIVE and not data.get("archive"):
            self.add_error("archive", _("Choose the archive to upload."))
        if source == Source.CONTAINERFILE and not detail:
            self.add_error("source_detail", _("Write the Containerfile."))
        if source == Source.RECIPE and detail not in {recipe.key for recipe in DEMO_RECIPES}:
            self.add_error("source_detail", _("Name one of the built-in recipes."))
        data["source_detail"] = detail
        return data


@admin.register(Image)
class ImageAdmin(admin.ModelAdmin):
    list_display = ["name", "project", "source", "state", "size", "contents", "jobs_using"]
    list_filter = ["state", "source", "project"]
    search_fields = ["name", "digest", "project__name"]
    readonly_fields = [
        "state",
        "problem",
        "digest",
        "size",
        "layer_list",
        "python_version",
        "cuda_version",
        "torch_version",
        "jobs_using",
        "created_at",
    ]

    def get_queryset(self, request):
        return super().get_queryset(request).annotate(job_count=Count("job"))

    def get_form(self, request, obj=None, **kwargs):
        if obj is None:
            kwargs["form"] = ImageAddForm
        return super().get_form(request, obj, **kwargs)

    def get_fields(self, request, obj=None):
        if obj is None:
            return ["project", "name", "is_default", "source", "source_detail", "archive"]
        return ["project", "name", "is_default", "source", "source_detail", *self.readonly_fields]

    def get_readonly_fields(self, request, obj=None):
        if obj is None:
            return []
        return ["project", "source", "source_detail", *self.readonly_fields]

    def save_model(self, request, obj, form, change):
        if change or obj.source == Image.Source.HOST:
            super().save_model(request, obj, form, change)
            return
        obj.state = Image.State.ADDING
        super().save_model(request, obj, form, change)
        upload = form.cleaned_data.get("archive")
        if obj.source == Image.Source.ARCHIVE and upload:
            path = incoming_archive(obj.pk)
            path.parent.mkdir(parents=True, exist_ok=True)
            with path.open("wb") as out:
                for chunk in upload.chunks():
                    out.write(chunk)
        image_id = obj.pk
        transaction.on_commit(lambda: send_task("jobs.tasks.image_add", args=[image_id]))

    @admin.display(description=_("size"))
    def size(self, image: Image) -> str:
        return f"{image.size_bytes / MB:,.1f} MB" if image.size_bytes is not None else "—"

    @admin.display(description=_("contents"))
    def contents(self, image: Image) -> str:
        return " · ".join(image.contents) or "—"

    @admin.display(description=_("layers"))
    def layer_list(self, image: Image) -> str:
        """Each layer's digest and size, the base first."""
        lines = [(layer["digest"], f"{layer['size'] / MB:,.1f} MB") for layer in image.layers]
        return format_html_join(mark_safe("<br>"), "{} ({})", lines) or "—"

    @admin.display(description=_("jobs using it"), ordering="job_count")
    def jobs_using(self, image: Image):
        url = reverse("admin:jobs_job_changelist") + f"?image__id__exact={image.pk}"
        return format_html('<a href="{}">{}</a>', url, image.job_count)  # get_queryset's
