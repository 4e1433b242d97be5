"""Personal API tokens: the bearer tokens of the API (``trainyard.api``) and the CLI."""

import hashlib
import secrets

from django.conf import settings
from django.db import models
from django.utils.translation import gettext_lazy as _


def hash_token(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


class ApiToken(models.Model):
    """A personal API token; only its hash is stored, the token is shown once."""

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens"
    )
    name = models.CharField(_("name"), max_length=64, default="default")
    token_hash = models.CharField(max_length=64, unique=True)
    prefix = models.CharField(max_length=8)
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        # The table it had in the jobs app, rows and all (migrations 0001 here, jobs 0009).
        db_table = "jobs_apitoken"
        ordering = ["-created_at"]
        verbose_name = _("API token")
        verbose_name_plural = _("API tokens")

    def __str__(self) -> str:
        return f"{self.user} {self.prefix}…"

    @classmethod
    def issue(cls, *, user, name: str = "default") -> tuple["ApiToken", str]:
        token = "ty_" + secrets.token_urlsafe(32)
        row = cls.objects.create(
            user=user, name=name, token_hash=hash_token(token), prefix=token[:8]
        )
        return row, token
