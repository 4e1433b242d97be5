"""Form fields that leave the domain rules to the submit service.

The job form is a thin front for ``job_submit``: it must not refuse a value
with a generic "Select a valid choice" before the service can say what is
wrong (a disabled spec, a dataset of another project, ...).
"""

from django import forms
from django.utils.functional import lazy


def _interpolated(message, values: dict) -> str:
    return str(message) % values


# A lazy message with its numbers filled in when shown, in the reader's language.
interpolated_lazy = lazy(_interpolated, str)


class NameChoiceField(forms.ChoiceField):
    """A select of names whose validity the service decides."""

    def valid_value(self, value: str) -> bool:
        return True


class NameMultipleChoiceField(forms.MultipleChoiceField):
    """Checkboxes of names whose validity the service decides."""

    def valid_value(self, value: str) -> bool:
        return True


def number_input(**attrs) -> forms.NumberInput:
    """A number box; the service parses and range-checks what it holds."""
    return forms.NumberInput(attrs={"inputmode": "decimal", **attrs})
