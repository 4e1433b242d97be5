"""Liveness by ``flock``: a lock the kernel drops when its holder dies, whatever pid reuse does."""

from __future__ import annotations

import fcntl
import os
from pathlib import Path


def lock_held(path: Path) -> bool:
    """Whether a live process holds an exclusive ``flock`` on ``path`` (False if it is absent)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except FileNotFoundError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)
    return False
