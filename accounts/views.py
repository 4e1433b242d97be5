"""The profile page: who you are, and your personal API tokens."""

from __future__ import annotations

from django.contrib import messages
from django.core.exceptions import ValidationError
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils.translation import gettext as _
from django.views.decorators.http import require_http_methods, require_POST

from .services import api_token_create, api_token_revoke


@require_http_methods(["GET", "POST"])
def profile(request: HttpRequest) -> HttpResponse:
    context: dict = {"token_name": ""}
    status = 200
    if request.method == "POST":
        name = request.POST.get("name", "")
        try:
            _row, token = api_token_create(user=request.user, name=name)
        except ValidationError as error:
            context.update(token_name=name, name_errors=error.message_dict["name"])
            status = 422
        else:
            # Shown in this response only: the token is not stored, only its hash.
            context["new_token"] = token
    context["tokens"] = request.user.api_tokens.all()
    return render(request, "accounts/profile.html", context, status=status)


@require_POST
def token_revoke(request: HttpRequest, token_id: int) -> HttpResponse:
    if api_token_revoke(user=request.user, token_id=token_id):
        messages.success(request, _("Token revoked."))
    else:
        messages.error(request, _("You have no such token."))
    return redirect("profile")
