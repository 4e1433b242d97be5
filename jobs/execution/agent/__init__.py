"""The local executor's node agent: a Celery worker on each node (``manage.py run_agent``).

An adapter over the replica runtime (``jobs.execution.replica``): it imports that
runtime, ``report`` and the layers below, never the Slurm adapter. Its tasks keep their
names (``jobs.agent.*``): queued messages and beat use them.
"""
