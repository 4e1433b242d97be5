"""From a job's submit data (form or API: names, cores, GiB) to validated values.

The data has the shape of the API body (``POST /api/v1/jobs``); omitted
optional fields take the form's defaults. Every rule that fails adds a
message naming the field and the limit; all of them are raised together.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.utils.translation import gettext as _

from core.lookups import missing_name_message, row_named
from jobs.models import CodeVersion, Dataset, Image, Job, PretrainedModel, Project, WorkloadTemplate
from jobs.models.job import MAX_COMMAND_CHARS, MAX_RETRIES
from jobs.selectors import projects_for_user
from resources.models import Spec
from resources.request import ResourceRequest

from .ports import port_errors
from .resources_input import FieldErrors, as_integer, resources_resolve
from .template_input import augmentation_command_clean, template_resolve

MAX_NAME_CHARS = Job._meta.get_field("name").max_length
MAX_RUNTIME_MINUTES = 365 * 24 * 60
PRIORITIES = {"normal": Job.Priority.NORMAL, "high": Job.Priority.HIGH}


@dataclass(frozen=True)
class JobInput:
    """Everything a new job needs, checked and resolved to rows."""

    project: Project
    name: str
    task_mode: str
    config_mode: str
    spec: Spec | None
    request: ResourceRequest
    command: str
    datasets: list[Dataset]
    pretrained_models: list[PretrainedModel]
    code_version: CodeVersion | None
    image: Image | None
    ports: list[int]
    max_runtime_minutes: int | None
    max_retries: int
    priority: int
    preemptible: bool
    keep_checkpoint: bool
    template: WorkloadTemplate | None = None
    augmentation_command: str = ""


def job_input_errors(*, user: AbstractBaseUser, data: dict) -> FieldErrors:
    """What ``job_input_resolve`` would refuse in ``data``, by field, without raising.

    The New job form shows them next to their fields as they are typed.
    """
    errors = FieldErrors()
    _checked(user, data, errors)
    return errors


def job_input_resolve(*, user: AbstractBaseUser, data: dict) -> JobInput:
    """Check ``data`` field by field; ``ValidationError`` with every problem at once."""
    errors = FieldErrors()
    data, project, request, values = _checked(user, data, errors)
    errors.raise_if_any()
    config_mode = data.get("config_mode") or Job.ConfigMode.PARAMETER
    return JobInput(
        project=project,
        task_mode=data.get("task_mode") or Job.TaskMode.SINGLE,
        config_mode=config_mode,
        spec=Spec.objects.get(name=data["spec"]) if config_mode == Job.ConfigMode.SPEC else None,
        request=request,
        **values,
    )


def _checked(user: AbstractBaseUser, data: dict, errors: FieldErrors) -> tuple:
    """Each field's value, checked; every problem goes to ``errors``."""
    template, data = template_resolve(data=data, errors=errors)
    project = _project(user, data.get("project"), errors)
    request = resources_resolve(user=user, data=data, errors=errors)
    values = {
        "name": _name(data.get("name"), errors),
        "command": _command(data.get("command"), errors),
        "ports": _ports(data.get("ports"), errors),
        "max_runtime_minutes": _max_runtime(data.get("max_runtime_minutes"), errors),
        "max_retries": _max_retries(data.get("max_retries"), errors),
        "priority": _priority(user, data.get("priority"), errors),
        "preemptible": _preemptible(data.get("preemptible"), errors),
        "keep_checkpoint": _keep_checkpoint(data.get("keep_checkpoint"), errors),
        "template": template,
        "augmentation_command": augmentation_command_clean(
            data.get("augmentation_command"), errors
        ),
    }
    if project is not None:
        values.update(_project_items(project, data, errors))
    return data, project, request, values


def _project(user: AbstractBaseUser, name: str | None, errors: FieldErrors) -> Project | None:
    if not name:
        errors.add("project", _("Choose a project"))
        return None
    project = row_named(projects_for_user(user=user), name)[0]
    if project is None:
        # Not "there is no project": whether a project the person is not in exists stays unsaid.
        errors.add(
            "project", _("You are not a member of a project named %(name)s") % {"name": name}
        )
    return project


def _name(name: str | None, errors: FieldErrors) -> str:
    name = (name or "").strip()
    if not name:
        errors.add("name", _("Give the job a name"))
    elif len(name) > MAX_NAME_CHARS:
        errors.add(
            "name",
            _("The name is at most %(max)s characters; yours has %(n)s")
            % {"max": MAX_NAME_CHARS, "n": len(name)},
        )
    return name


def _command(command: str | None, errors: FieldErrors) -> str:
    # Browsers send CRLF line ends; the command runs line by line on Linux.
    command = (command or "").replace("\r\n", "\n").strip("\n")
    if not command.strip():
        errors.add("command", _("Enter a startup command"))
    elif len(command) > MAX_COMMAND_CHARS:
        errors.add(
            "command",
            _("The startup command is at most %(max)s characters; yours has %(n)s")
            % {"max": f"{MAX_COMMAND_CHARS:,}", "n": f"{len(command):,}"},
        )
    return command


def _ports(ports: list | None, errors: FieldErrors) -> list[int]:
    ports = list(ports or [])
    for message in port_errors(ports):
        errors.add("ports", message)
    return sorted(p for p in ports if isinstance(p, int))


def _max_runtime(value, errors: FieldErrors) -> int | None:
    minutes = as_integer(value, "max_runtime_minutes", errors)
    if minutes is not None and not 1 <= minutes <= MAX_RUNTIME_MINUTES:
        errors.add(
            "max_runtime_minutes",
            _("Max run time must be between 1 and %(max)s minutes (365 days); you gave %(n)s")
            % {"max": f"{MAX_RUNTIME_MINUTES:,}", "n": minutes},
        )
    return minutes


def _max_retries(value, errors: FieldErrors) -> int:
    retries = as_integer(value, "max_retries", errors)
    retries = 0 if retries is None else retries
    if not 0 <= retries <= MAX_RETRIES:
        errors.add(
            "max_retries",
            _("Replica retries must be between 0 and %(max)s; you gave %(n)s")
            % {"max": MAX_RETRIES, "n": retries},
        )
    return retries


def _priority(user: AbstractBaseUser, value: str | None, errors: FieldErrors) -> int:
    priority = PRIORITIES.get(value or "normal")
    if priority is None:
        errors.add("priority", _("Priority must be normal or high; you gave %(p)s") % {"p": value})
        return Job.Priority.NORMAL
    if priority == Job.Priority.HIGH and not user.is_staff:
        errors.add("priority", _("Only staff may submit high-priority jobs"))
    return priority


def _preemptible(value, errors: FieldErrors) -> bool:
    if _true_or_false(value):
        return bool(value)
    errors.add(
        "preemptible", _("Preemptible must be true or false; you gave %(value)s") % {"value": value}
    )
    return False


def _keep_checkpoint(value, errors: FieldErrors) -> bool:
    if _true_or_false(value):
        return bool(value)
    errors.add(
        "keep_checkpoint",
        _("Keep the checkpoint must be true or false; you gave %(value)s") % {"value": value},
    )
    return False


def _true_or_false(value) -> bool:
    """A flag's value is true or false; omitted (None) is false. The form sends a ticked box
    as True."""
    return value is None or isinstance(value, bool)


def _project_items(project: Project, data: dict, errors: FieldErrors) -> dict:
    """Datasets, pretrained models, code version and image, all of ``project``."""
    return {
        "datasets": _items(project, Dataset, data.get("datasets"), "datasets", errors),
        "pretrained_models": _items(
            project, PretrainedModel, data.get("pretrained_models"), "pretrained_models", errors
        ),
        "code_version": _one_item(project, CodeVersion, data, "code_version", errors),
        "image": usable_image(_one_item(project, Image, data, "image", errors), errors),
    }


def usable_image(image: Image | None, errors: FieldErrors) -> Image | None:
    """An image jobs can start in, now or once it is added (the job waits for it: the
    scheduler's ``image_reason``); the node's own system only where the site allows it."""
    if image is not None and image.state == Image.State.FAILED:
        errors.add(
            "image",
            _("Image %(name)s could not be added: %(problem)s")
            % {"name": image.name, "problem": image.problem},
        )
    elif (image is None or image.is_host_system) and not settings.TRAINYARD_HOST_SYSTEM_JOBS:
        errors.add("image", _("This site runs every job in an image: choose one of the project's."))
    return image


def _items(project: Project, model, names: list | None, field: str, errors: FieldErrors) -> list:
    """The named items in the given order; all of the project's when ``names`` is None."""
    available = {item.name: item for item in model.objects.filter(project=project)}
    if names is None:
        return list(available.values())
    chosen = []
    for name in dict.fromkeys(names):
        if name in available:
            chosen.append(available[name])
        else:
            errors.add(field, missing_name_message(model, name, project_name=project.name))
    return chosen


def _one_item(project: Project, model, data: dict, field: str, errors: FieldErrors):
    """The named item; omitted means the project's default (newest code, default image)."""
    if field not in data:
        return _default_item(project, model)
    name = data[field]
    if not name:
        return None
    item, missing = row_named(
        model.objects.filter(project=project), name, project_name=project.name
    )
    if item is None:
        errors.add(field, missing)
    return item


def _default_item(project: Project, model):
    if model is Image:
        return Image.objects.filter(project=project, is_default=True).first()
    return model.objects.filter(project=project).first()  # newest first by Meta.ordering
