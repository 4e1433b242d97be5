"""Writes to billing: accounts and their free grants, and the usage accrual."""

from .accounts import (
    account_disable_billing,
    account_enable_billing,
    jobs_needing_billing,
)
from .accrual import usage_accrue

__all__ = [
    "account_disable_billing",
    "account_enable_billing",
    "jobs_needing_billing",
    "usage_accrue",
]
