"""Finding a node's tools on ``PATH`` (``ip``, ``nft``, ``bwrap``) as ``shutil.which`` does.

Not ``shutil`` itself: with the ``bz2`` and ``lzma`` it imports, it cost every Slurm
replica's keeper a few milliseconds of its start for this one lookup.
"""

from __future__ import annotations

import os


def find_tool(name: str) -> str | None:
    """The first executable file ``name`` on ``PATH`` (the default path without one)."""
    for folder in os.environ.get("PATH", os.defpath).split(os.pathsep):
        path = os.path.join(folder or os.curdir, name)
        if os.access(path, os.F_OK | os.X_OK) and not os.path.isdir(path):
            return path
    return None
