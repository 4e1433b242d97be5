"""Writes to billing accounts."""

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext as _

from billing.models import Account, AccountEvent, FreeGrant
from resources.models import GpuModel, SiteSettings


def account_for_user(*, user: AbstractBaseUser) -> Account:
    """The user's account, created on first use with the site's free grant."""
    account, created = Account.objects.get_or_create(user=user)
    if created:
        free_grant_give(account=account)
    return account


def free_grant_give(*, account: Account) -> None:
    """Give each free-tier model's grant once; a second call changes nothing."""
    hours = SiteSettings.load().free_grant_card_hours
    for gpu_model in GpuModel.objects.filter(free_tier=True):
        FreeGrant.objects.get_or_create(
            account=account, gpu_model=gpu_model, defaults={"card_hours": hours}
        )


def account_enable_billing(*, account: Account, actor: AbstractBaseUser) -> None:
    """Turn on billing for an account, and log who did it."""
    with transaction.atomic():
        locked = Account.objects.select_for_update().get(pk=account.pk)
        if locked.billing_enabled:
            return
        locked.billing_enabled = True
        locked.billing_enabled_at = timezone.now()
        locked.billing_enabled_by = actor
        locked.save(update_fields=["billing_enabled", "billing_enabled_at", "billing_enabled_by"])
        AccountEvent.objects.create(
            account=locked,
            actor=actor,
            kind="billing_enabled",
            message=_("Billing enabled by %(actor)s") % {"actor": actor},
        )
