"""Filters of the New job form's templates."""

from django import template

register = template.Library()


@register.filter
def live_errors(field) -> list[str]:
    """What the form's live check found wrong with ``field``; none once submit said it."""
    if field.errors:
        return []
    live_errors = getattr(field.form, "live_errors", None)
    return live_errors(field.name) if live_errors else []
