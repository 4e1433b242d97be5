"""A user's own templates: save a job as one, list them, delete one."""

from __future__ import annotations

from django.contrib import messages
from django.core.exceptions import ValidationError
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET, require_POST

from .detail_views import detail_context, visible_job
from .selectors import personal_templates_for
from .services.personal_templates import personal_template_save


@require_POST
def job_save_template(request: HttpRequest, pk: int) -> HttpResponse:
    job = visible_job(request, pk)
    name = request.POST.get("template_name", "")
    try:
        template, created = personal_template_save(user=request.user, job=job, name=name)
    except ValidationError as error:
        context = detail_context(
            job, template_name=name, template_errors=error.message_dict["template_name"]
        )
        return render(request, "jobs/job_detail.html", context, status=422)
    text = (
        _("Saved as your template “%(name)s”.")
        if created
        else _("Your template “%(name)s” now holds this job.")
    )
    messages.success(request, text % {"name": template.name})
    return redirect("jobs:detail", pk=job.pk)


@require_GET
def personal_template_list(request: HttpRequest) -> HttpResponse:
    templates = personal_templates_for(user=request.user)
    return render(request, "jobs/personal_templates.html", {"templates": templates})


@require_POST
def personal_template_delete(request: HttpRequest, pk: int) -> HttpResponse:
    template = get_object_or_404(personal_templates_for(user=request.user), pk=pk)
    template.delete()
    messages.success(request, _("Template “%(name)s” deleted.") % {"name": template.name})
    return redirect("jobs:templates")
