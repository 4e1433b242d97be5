"""The Slurm backend: Trainyard keeps queues, quotas and billing; Slurm runs the replicas.

- ``cli``: the Slurm command-line tools (``sbatch``, ``squeue``, ``scancel``, ``sinfo``).
- ``inventory``: Slurm's nodes become Trainyard ``slurm`` nodes.
- ``scripts`` / ``submit``: one ``sbatch`` per job attempt, pinned to the placed nodes.
- ``outcome``: Slurm job states and exit codes in Trainyard's terms.
- ``track``: the periodic pass that reports what Slurm did through ``jobs.execution.report``.
"""
