"""Notification settings: two checkboxes per kind, the wait threshold, the email language."""

from __future__ import annotations

from dataclasses import dataclass

from django import forms
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from .models import Kind, NotificationSettings

CHANNEL_FIELDS = [f"{kind}_{channel}" for kind in Kind.values for channel in ("in_app", "email")]


@dataclass(frozen=True)
class KindRow:
    label: str
    in_app: forms.BoundField
    email: forms.BoundField


class NotificationSettingsForm(forms.ModelForm):
    # Declared so that the model's validators give the messages (they name the limit).
    long_wait_minutes = forms.IntegerField(
        label=gettext_lazy("Long wait threshold (minutes)"),
        help_text=gettext_lazy("Tell me when a job has waited this long without starting."),
        error_messages={
            "required": gettext_lazy("Enter the long wait threshold in minutes"),
            "invalid": gettext_lazy("The long wait threshold must be a whole number of minutes"),
        },
    )

    class Meta:
        model = NotificationSettings
        fields = [*CHANNEL_FIELDS, "long_wait_minutes", "language"]

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        for kind in Kind:
            self.fields[f"{kind}_in_app"].label = _("%(event)s: in the app") % {"event": kind.label}
            self.fields[f"{kind}_email"].label = _("%(event)s: by email") % {"event": kind.label}

    def kind_rows(self) -> list[KindRow]:
        return [
            KindRow(label=kind.label, in_app=self[f"{kind}_in_app"], email=self[f"{kind}_email"])
            for kind in Kind
        ]
