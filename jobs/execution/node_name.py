"""What a node may be called: one folder name, never a path (``Node.name`` validates it too).

Its own module, for the Slurm replica's keeper checks the node Slurm names with it on every
replica's start and imports nothing it does not need (``replica/keeper.py``).
"""

from __future__ import annotations

import re

NODE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")
