"""The user's notifications page, marking them read, and their notification settings."""

from __future__ import annotations

from django.conf import settings
from django.contrib import messages
from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest
from django.shortcuts import redirect, render
from django.utils.translation import get_language
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from .forms import NotificationSettingsForm
from .selectors import notifications_for_user, settings_for_user
from .services import notification_settings_save, notifications_mark_read
from .texts import notification_text

PER_PAGE = 50


@require_GET
def notification_list(request: HttpRequest) -> HttpResponse:
    return render(request, "notifications/list.html", _list_context(request))


@require_POST
def notification_mark_read(request: HttpRequest) -> HttpResponse:
    """Mark one notification read (``id``), or all of them (no ``id``)."""
    given = request.POST.get("id")
    if given is not None and not given.isdigit():
        return HttpResponseBadRequest(_("The notification id must be a whole number."))
    notifications_mark_read(
        user=request.user, notification_ids=[int(given)] if given is not None else None
    )
    if request.htmx and not request.htmx.boosted:
        return render(request, "notifications/list.html#notifications", _list_context(request))
    return redirect("notifications:list")


@require_http_methods(["GET", "POST"])
def notification_settings(request: HttpRequest) -> HttpResponse:
    instance = settings_for_user(user=request.user)
    if instance.pk is None and get_language() in dict(settings.LANGUAGES):
        instance.language = get_language()
    form = NotificationSettingsForm(request.POST or None, instance=instance)
    if request.method == "POST":
        if form.is_valid():
            notification_settings_save(user=request.user, values=form.cleaned_data)
            messages.success(request, _("Notification settings saved."))
            return redirect("notifications:settings")
        return render(request, "notifications/settings.html", {"form": form}, status=422)
    return render(request, "notifications/settings.html", {"form": form})


def _list_context(request: HttpRequest) -> dict:
    page = Paginator(notifications_for_user(user=request.user), PER_PAGE).get_page(
        request.GET.get("page")
    )
    for notification in page:
        notification.text = notification_text(notification)
    return {"page": page}
