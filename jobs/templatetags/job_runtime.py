"""``{% job_runtime job %}``: the job page's attempts, live log and outputs panel."""

from django import template

from jobs.runtime_views import runtime_context

register = template.Library()


@register.inclusion_tag("jobs/_runtime_panel.html", takes_context=True)
def job_runtime(context, job):
    return runtime_context(job, context["request"].GET)
