"""The bottom of a job's flow, below the scheduler and execution: every state change
(``transitions``), its log line (``event_log``), giving back what a job holds
(``release``, ``allocated_columns``) and asking for a scheduling pass (``pass_requests``).

It imports only ``jobs.models`` and other apps' lower layers; whatever needs to
happen above (a pass) is a Celery task sent by name.
"""
