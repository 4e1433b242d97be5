"""Rows named in a request (a form, the API, the CLI): found, or the field's error.

Every "There is no GPU model named A100" and "Dataset x is not in project y"
comes from here, so each lookup by name says the same in every language.
"""

from __future__ import annotations

from typing import TypeVar

from django.db.models import Model, QuerySet
from django.utils.text import capfirst
from django.utils.translation import gettext as _

Row = TypeVar("Row", bound=Model)


def row_named(
    queryset: QuerySet[Row], name: str, *, project_name: str | None = None
) -> tuple[Row | None, str]:
    """The row of ``queryset`` named ``name``, and '' ; else None and why, for the field.

    ``project_name``: the queryset holds one project's rows, and the message says so.
    """
    row = queryset.filter(name=name).first()
    if row is not None:
        return row, ""
    return None, missing_name_message(queryset.model, name, project_name=project_name)


def missing_name_message(model: type[Model], name: str, *, project_name: str | None = None) -> str:
    """Why ``name`` names no row of ``model`` (within the project, when one is given)."""
    thing = model._meta.verbose_name
    if project_name is not None:
        return _("%(thing)s %(name)s is not in project %(project)s") % {
            "thing": capfirst(thing),
            "name": name,
            "project": project_name,
        }
    return _("There is no %(thing)s named %(name)s") % {"thing": thing, "name": name}
