"""Billing: the ledger and its rules: accounts, free grants, prices, usage rows, admission rules.

It imports nothing of ``jobs``; ``jobs`` asks it at admission and for estimates.
What reads jobs (the accrual, stopping an account's jobs, the pages) is ``accounting``.
"""
