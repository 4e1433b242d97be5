"""Accounting: run time into ledger rows, what an account does to its jobs, the billing pages.

It sits above ``jobs`` (it reads replica attempts and stops jobs) and above
``billing``, the ledger and its rules, which ``jobs`` asks at admission.
"""
