"""The admin's forms in the units people think in: cores and GiB, stored as millicores and MiB.

Shown exactly (1000 MiB is 0.9765625 GiB, not 0.977), so saving a form
unchanged writes back the very same integers; what is typed is rounded to the
nearest millicore or MiB, as the job form and the API do (``resources.ratios``).
"""

from __future__ import annotations

from decimal import Decimal

from django import forms
from django.contrib import admin
from django.db import models
from django.utils.translation import gettext_lazy as _

from .models import Quota, exact_gib
from .ratios import cores_to_milli, gib_to_mib, milli_to_cores


class _UnitField(forms.DecimalField):
    """A decimal in the form's unit, an integer of the model's unit once cleaned."""

    def __init__(self, **kwargs) -> None:
        kwargs.setdefault("min_value", 0)
        super().__init__(**kwargs)

    def shown(self, stored: int) -> Decimal:
        raise NotImplementedError

    def stored(self, shown: Decimal) -> int:
        raise NotImplementedError

    def prepare_value(self, value):
        # The model's integer (initial) is converted; what was typed is shown as typed.
        if isinstance(value, int):
            return self.shown(value)
        return value

    def clean(self, value) -> int | None:
        shown = super().clean(value)
        return None if shown is None else self.stored(shown)

    def has_changed(self, initial, data) -> bool:
        try:
            typed = self.to_python(data)
        except forms.ValidationError:
            return True
        return (None if typed is None else self.stored(typed)) != initial


class CoresField(_UnitField):
    def __init__(self, **kwargs) -> None:
        kwargs.setdefault("decimal_places", 3)  # a millicore
        super().__init__(**kwargs)

    def shown(self, stored: int) -> Decimal:
        return milli_to_cores(stored)

    def stored(self, shown: Decimal) -> int:
        return cores_to_milli(shown)


class GibField(_UnitField):
    def shown(self, stored: int) -> Decimal:
        return exact_gib(stored)

    def stored(self, shown: Decimal) -> int:
        return gib_to_mib(shown)


UNIT_FIELDS = {
    "cpu_milli": (CoresField, _("CPU (cores)")),
    "memory_mib": (GibField, _("Memory (GiB)")),
    "vgpu_memory_mib": (GibField, _("GPU memory per GPU (GiB)")),
}


class UnitFieldsMixin:
    """For a ``ModelAdmin`` or an inline: the model's millicore and MiB columns in cores and GiB."""

    def formfield_for_dbfield(self, db_field: models.Field, request, **kwargs):
        if db_field.name in UNIT_FIELDS:
            field_class, label = UNIT_FIELDS[db_field.name]
            return field_class(
                label=label,
                required=not db_field.blank,
                help_text=db_field.help_text,
            )
        return super().formfield_for_dbfield(db_field, request, **kwargs)


@admin.display(description=_("CPU (cores)"))
def cpu_cores(obj) -> Decimal:
    return milli_to_cores(obj.cpu_milli)


@admin.display(description=_("Memory (GiB)"))
def memory_gib(obj) -> Decimal:
    return exact_gib(obj.memory_mib)


# A quota's limit in its resource's unit: cores, GiB, cards or percent of a card.
QUOTA_FIELDS = {Quota.Resource.CPU: CoresField(), Quota.Resource.MEMORY: GibField()}


class QuotaForm(forms.ModelForm):
    limit = forms.DecimalField(
        label=_("limit"),
        min_value=0,
        help_text=_(
            "CPU in cores, memory in GiB, GPU cards as a count, "
            "virtual-GPU compute in percent of a card."
        ),
    )

    class Meta:
        model = Quota
        fields = ["user", "resource", "gpu_model", "limit"]

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        if self.instance.pk:
            self.initial["limit"] = self.instance.limit_shown

    def clean(self) -> dict:
        cleaned = super().clean()
        resource, limit = cleaned.get("resource"), cleaned.get("limit")
        if resource is None or limit is None:
            return cleaned
        field = QUOTA_FIELDS.get(resource)
        if field is not None:
            cleaned["limit"] = field.stored(limit)
        elif limit != limit.to_integral_value():
            self.add_error(
                "limit",
                _("A limit on GPU cards or virtual-GPU compute is a whole number, not %(limit)s.")
                % {"limit": limit},
            )
        else:
            cleaned["limit"] = int(limit)
        return cleaned
