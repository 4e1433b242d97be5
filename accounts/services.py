"""Personal API tokens: created on the profile page or by ``create_api_token``."""

from __future__ import annotations

from django.contrib.auth.models import AbstractBaseUser
from django.core.exceptions import ValidationError
from django.utils.translation import gettext as _

from .models import ApiToken

MAX_TOKEN_NAME_CHARS = ApiToken._meta.get_field("name").max_length


def api_token_create(*, user: AbstractBaseUser, name: str) -> tuple[ApiToken, str]:
    """A new token for ``user``; the plain token is returned once and never stored."""
    name = name.strip() or "default"
    if len(name) > MAX_TOKEN_NAME_CHARS:
        raise ValidationError(
            {
                "name": [
                    _("The token name is at most %(max)s characters; yours has %(n)s")
                    % {"max": MAX_TOKEN_NAME_CHARS, "n": len(name)}
                ]
            }
        )
    return ApiToken.issue(user=user, name=name)


def api_token_revoke(*, user: AbstractBaseUser, token_id: int) -> bool:
    """Delete one of the user's own tokens; False if they have no such token."""
    deleted, _rows = ApiToken.objects.filter(user=user, pk=token_id).delete()
    return bool(deleted)
