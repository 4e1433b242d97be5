"""The New job page: submit, and the previews that re-render one panel each."""

from __future__ import annotations

from django.conf import settings
from django.contrib import messages
from django.core.exceptions import ValidationError
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.utils import translation
from django.utils.translation import gettext as _
from django.views.decorators.http import require_http_methods

from .detail_views import visible_job
from .forms import JobForm
from .free_panel import free_panel_for_page
from .selectors import personal_template_links_for, personal_templates_for
from .services.job_export import job_submit_body
from .services.submit import job_submit

TEMPLATE = "jobs/job_form.html"
# What htmx may ask to re-render after a change ("apply"), by panel name.
# "resource-checks": the resource section's messages and summary only, as a value is typed.
# "limit-checks": the same for the ports and limits.
APPLY_PANELS = {"resources", "resource-checks", "limit-checks", "project-items"}


@require_http_methods(["GET", "POST"])
def job_new(request: HttpRequest) -> HttpResponse:
    if request.method == "GET":
        body = _prefill_body(request)
        form = JobForm(user=request.user, project_name=request.GET.get("project", ""), body=body)
        return _page(request, form)
    action = request.POST.get("_action", "submit")
    if action == "language":
        return _switch_language(request)
    form = JobForm(request.POST, user=request.user, submitting=action == "submit")
    if action == "submit":
        return _submit(request, form)
    context: dict = {}
    if action == "feasibility":
        context["feasibility"] = form.feasibility()
    elif action == "environment":
        context.update(environment=form.environment(), environment_requested=True)
    panel = request.POST.get("_panel") if action == "apply" else action
    if request.htmx and panel in APPLY_PANELS | {"feasibility", "environment"}:
        return render(request, f"{TEMPLATE}#{panel}", {"form": form, **context})
    return _page(request, form, **context)


def _prefill_body(request: HttpRequest) -> dict | None:
    """The body to fill the form with: ``?from=<job>`` (Run again) or ``?saved=<template>``."""
    job_id, template_id = request.GET.get("from", ""), request.GET.get("saved", "")
    if job_id:
        if not job_id.isdigit():
            raise Http404
        return job_submit_body(visible_job(request, int(job_id)))
    if template_id:
        if not template_id.isdigit():
            raise Http404
        return get_object_or_404(personal_templates_for(user=request.user), pk=template_id).body
    return None


def _submit(request: HttpRequest, form: JobForm) -> HttpResponse:
    if form.is_valid():
        try:
            job = job_submit(user=request.user, data=form.submit_data())
        except ValidationError as error:
            form.add_service_errors(error)
        else:
            messages.success(request, _("Job #%(id)s submitted.") % {"id": job.pk})
            return redirect("jobs:detail", pk=job.pk)
    return _page(request, form)


def _switch_language(request: HttpRequest) -> HttpResponse:
    """Django's ``set_language`` without leaving the page: the form comes back as typed.

    The form is built after the switch, so its labels and messages are in the new language.
    """
    language = request.POST.get("_language", "")
    if not translation.check_for_language(language):
        language = translation.get_language()
    translation.activate(language)
    request.LANGUAGE_CODE = translation.get_language()
    response = _page(request, JobForm(request.POST, user=request.user))
    response.set_cookie(
        settings.LANGUAGE_COOKIE_NAME,
        language,
        max_age=settings.LANGUAGE_COOKIE_AGE,
        path=settings.LANGUAGE_COOKIE_PATH,
        domain=settings.LANGUAGE_COOKIE_DOMAIN,
        secure=settings.LANGUAGE_COOKIE_SECURE,
        httponly=settings.LANGUAGE_COOKIE_HTTPONLY,
        samesite=settings.LANGUAGE_COOKIE_SAMESITE,
    )
    return response


def _page(request: HttpRequest, form: JobForm, **context) -> HttpResponse:
    context = {
        "form": form,
        "free": free_panel_for_page(user=request.user),
        "personal_templates": personal_template_links_for(user=request.user),
        **context,
    }
    return render(request, TEMPLATE, context)
