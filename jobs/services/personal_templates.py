"""Personal templates: a job saved under a name, to open the New job form filled with it."""

from __future__ import annotations

from django.contrib.auth.models import AbstractBaseUser
from django.core.exceptions import ValidationError
from django.utils.translation import gettext as _

from ..models import Job, PersonalTemplate
from .job_export import job_submit_body

MAX_NAME_CHARS = PersonalTemplate._meta.get_field("name").max_length


def personal_template_save(
    *, user: AbstractBaseUser, job: Job, name: str
) -> tuple[PersonalTemplate, bool]:
    """Save ``job`` as the user's template ``name``; one of that name is replaced.

    Returns the template and whether it is new. ``ValidationError`` on
    ``template_name`` when the name is empty or too long.
    """
    name = (name or "").strip()
    if not name:
        raise ValidationError({"template_name": [_("Template name: give the template a name.")]})
    if len(name) > MAX_NAME_CHARS:
        raise ValidationError(
            {
                "template_name": [
                    _("Template name: at most %(max)d characters; you gave %(count)d.")
                    % {"max": MAX_NAME_CHARS, "count": len(name)}
                ]
            }
        )
    return PersonalTemplate.objects.update_or_create(
        owner=user, name=name, defaults={"body": job_submit_body(job), "source_job": job}
    )
