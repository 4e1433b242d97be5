"""The check in front of every staff page: 403 for anyone else (login is required first)."""

from functools import wraps

from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse


def staff_only(view):
    @wraps(view)
    def wrapper(request: HttpRequest, *args, **kwargs) -> HttpResponse:
        if not request.user.is_staff:
            raise PermissionDenied
        return view(request, *args, **kwargs)

    return wrapper
