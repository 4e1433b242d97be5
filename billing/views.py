from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from .services import account_for_user


def my_billing(request: HttpRequest) -> HttpResponse:
    account = account_for_user(user=request.user)
    return render(
        request,
        "billing/my_billing.html",
        {"account": account, "grants": account.grants.select_related("gpu_model")},
    )
