"""Writes to billing: accounts and their free grants, and the usage accrual."""

from .accounts import account_enable_billing, account_for_user, free_grant_give
from .accrual import usage_accrue

__all__ = ["account_enable_billing", "account_for_user", "free_grant_give", "usage_accrue"]
