"""A job's workload template in the submit data: which one, and what it fills in.

A template is a starting point, not a cage: the person may edit the command it
fills in. What the submit data leaves out (the API omits it, or the form sends
an empty command) comes from the template: startup command, augmentation-search
command, and max run time. Whether this person may use it with this GPU model is
``jobs.estimates.rules.template_errors``, which the submit service checks with the other
admission rules.
"""

from __future__ import annotations

from django.utils.translation import gettext as _

from core.lookups import row_named
from jobs.models import WorkloadTemplate
from jobs.models.job import MAX_COMMAND_CHARS

from .resources_input import FieldErrors


def template_resolve(*, data: dict, errors: FieldErrors) -> tuple[WorkloadTemplate | None, dict]:
    """The named template (None when none is named) and ``data`` with its defaults."""
    name = data.get("template")
    if not name:
        return None, data
    template, missing = row_named(WorkloadTemplate.objects.all(), name)
    if template is None:
        errors.add("template", missing)
        return None, data
    filled = dict(data)
    if not (filled.get("command") or "").strip():
        filled["command"] = template.command_template
    filled.setdefault("augmentation_command", template.augmentation_command)
    filled.setdefault("max_runtime_minutes", template.default_max_runtime_minutes)
    return template, filled


def augmentation_command_clean(command: str | None, errors: FieldErrors) -> str:
    """Optional; the same limits as the startup command, which it runs before."""
    command = (command or "").replace("\r\n", "\n").strip("\n")
    if len(command) > MAX_COMMAND_CHARS:
        errors.add(
            "augmentation_command",
            _("The augmentation-search command is at most %(max)s characters; yours has %(n)s")
            % {"max": f"{MAX_COMMAND_CHARS:,}", "n": f"{len(command):,}"},
        )
    return command if command.strip() else ""
