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
    borrow_limit = forms.DecimalField(
        label=_("borrow limit"),
        min_value=0,
        required=False,
        help_text=_(
            "In the limit's unit: how much beyond the limit this user's preemptible jobs may "
            "borrow while it is idle. Empty: no cap."
        ),
    )

    class Meta:
        model = Quota
        fields = ["user", "resource", "gpu_model", "limit", "borrow_limit"]

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        if self.instance.pk:
            self.initial["limit"] = self.instance.limit_shown
            self.initial["borrow_limit"] = self.instance.borrow_limit_shown

    def clean(self) -> dict:
        cleaned = super().clean()
        resource = cleaned.get("resource")
        if resource is None:
            return cleaned
        for name in ("limit", "borrow_limit"):
            if cleaned.get(name) is not None:
                cleaned[name] = self._stored(resource, name, cleaned[name])
        return cleaned

    def _stored(self, resource: str, name: str, shown: Decimal) -> int | Decimal:
        """``shown`` (in the resource's unit) as the integer the model keeps."""
        field = QUOTA_FIELDS.get(resource)
        if field is not None:
            return field.stored(shown)
        if shown != shown.to_integral_value():
            self.add_error(
                name,
                _("A limit on GPU cards or virtual-GPU compute is a whole number, not %(limit)s.")
                % {"limit": shown},
            )
            return shown
        return int(shown)
