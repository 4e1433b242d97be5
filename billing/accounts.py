"""The account lookup: a user's billing account, created on first use.

Part of billing's lower layer (with the models, the rules and the prices), so
that jobs and billing's own rules may read an account without importing the
services that stop jobs.
"""

from django.contrib.auth.models import AbstractBaseUser

from billing.models import Account, FreeGrant
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
