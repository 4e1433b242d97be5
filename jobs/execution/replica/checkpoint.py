"""A replica's checkpoint folder: kept across the job's attempts, handed to each one's uid.

The folder (``files.replica_checkpoint_dir``) is the same for every attempt of a
replica, a retry or a preemption alike, so a job that saves there resumes where
it stopped. Each attempt may run as another slot uid (``slots.py``), so before
it starts the tree becomes the new uid's. What is in the tree was written by
the job, a stranger:

- no link is ever followed: each entry is opened relative to its folder's
  descriptor with ``O_NOFOLLOW`` and changed through its own descriptor, once
  that descriptor is checked to be the inode that was looked at;
- only folders and regular files a replica (a slot uid) or the agent itself
  (when it is not root) owns change hands: never root's nor another user's (a
  hard link to a host file), nor a file with a second name (it may be a hard
  link to another job's file); links, pipes and sockets keep their owner;
- the walks keep one descriptor per level and go at most ``MAX_DEPTH`` levels
  down (``MAX_ENTRIES`` entries) when handing over; removing moves what lies
  deeper up to the top, so no depth a job makes can exhaust the agent.

Standard library and settings only: the Slurm keeper uses it without Django's apps.
"""

from __future__ import annotations

import contextlib
import os
import re
import stat
from pathlib import Path

from jobs.execution.node_settings import settings

FOLDER_MODE = 0o700
PARENT_MODE = 0o711  # the job's uid may pass through, never list
MAX_DEPTH = 64
MAX_ENTRIES = 200_000
OPEN_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC


class CheckpointRefused(OSError):
    """The checkpoint path is not a plain folder (a link, a file): it is not used."""


def checkpoint_prepare(path: Path, *, base: Path, uid: int | None) -> None:
    """Make ``path`` (and its parents up to ``base``) and hand its tree to ``uid``.

    Parents are made by the agent and only let the job pass (0711); the folder
    itself is the job's alone (0700). ``uid`` None: no uid of its own (the agent's).
    """
    for parent in reversed([p for p in path.parents if p.is_relative_to(base)]):
        with contextlib.suppress(FileExistsError):
            os.mkdir(parent, PARENT_MODE)
        fd = _open_folder(parent)
        try:
            os.fchmod(fd, PARENT_MODE)
        finally:
            os.close(fd)
    with contextlib.suppress(FileExistsError):
        os.mkdir(path, FOLDER_MODE)
    checkpoint_hand_over(path, uid)


def checkpoint_hand_over(path: Path, uid: int | None) -> None:
    """The folder, and what earlier attempts left in it, become ``uid``'s; nothing else does.

    ``uid`` None (no uid of its own; or the Slurm keeper hands it over on the node): the
    folder is only checked, and closed to others where it is ours.
    """
    if uid is None:
        info = os.lstat(path)
        if not stat.S_ISDIR(info.st_mode):
            raise CheckpointRefused(f"{path} is not a folder")
        if info.st_uid == os.geteuid():
            os.chmod(path, FOLDER_MODE)
        return
    fd = _open_folder(path)
    try:
        os.fchown(fd, uid, uid)
        os.fchmod(fd, FOLDER_MODE)
        _hand_over_tree(fd, uid, _replica_owners())
    finally:
        os.close(fd)


def _open_folder(name: Path | str, *, dir_fd: int | None = None) -> int:
    """A folder opened without following a link; ``CheckpointRefused`` if it is not one."""
    try:
        return os.open(name, OPEN_FLAGS | os.O_DIRECTORY, dir_fd=dir_fd)
    except FileNotFoundError:
        raise
    except OSError as error:
        raise CheckpointRefused(f"{name} is not a folder: {error.strerror or error}") from error


def _replica_owners() -> range | set[int]:
    """Owners whose entries may change hands: the slot uids, and the agent unless it is root."""
    base = settings.TRAINYARD_SANDBOX_UID_BASE
    slot_uids = range(base, base + settings.TRAINYARD_SANDBOX_UID_COUNT)
    agent = os.geteuid()
    return slot_uids if agent == 0 or agent in slot_uids else {*slot_uids, agent}


def _hand_over_tree(top_fd: int, uid: int, owners) -> None:
    levels = [(os.dup(top_fd), iter(os.listdir(top_fd)))]
    entries = 0
    try:
        while levels and entries < MAX_ENTRIES:
            fd, names = levels[-1]
            name = next(names, None)
            if name is None:
                os.close(fd)
                levels.pop()
                continue
            entries += 1
            folder = _give(name, fd, uid, owners, descend=len(levels) < MAX_DEPTH)
            if folder is not None:
                try:
                    levels.append((folder, iter(os.listdir(folder))))
                except OSError:
                    os.close(folder)
    finally:
        for fd, _names in levels:
            os.close(fd)


def _give(name: str, folder_fd: int, uid: int, owners, *, descend: bool) -> int | None:
    """Hand one entry to ``uid`` if it may change hands; a folder to walk into comes back open."""
    try:
        seen = os.stat(name, dir_fd=folder_fd, follow_symlinks=False)
    except OSError:
        return None
    is_folder = stat.S_ISDIR(seen.st_mode)
    if seen.st_uid != uid and not _may_change_hands(seen, owners):
        return None
    if seen.st_uid == uid and not (is_folder and descend):
        return None
    try:
        fd = os.open(name, OPEN_FLAGS, dir_fd=folder_fd)
    except OSError:  # gone, or swapped for a link since it was looked at
        return None
    keep = False
    try:
        now = os.fstat(fd)
        if (now.st_dev, now.st_ino) != (seen.st_dev, seen.st_ino):
            return None
        if now.st_uid != uid:
            if not _may_change_hands(now, owners):
                return None
            os.fchown(fd, uid, uid)
        keep = is_folder and descend
        return fd if keep else None
    finally:
        if not keep:
            os.close(fd)


def _may_change_hands(info: os.stat_result, owners) -> bool:
    if info.st_uid not in owners:
        return False
    if stat.S_ISDIR(info.st_mode):
        return True
    return stat.S_ISREG(info.st_mode) and info.st_nlink == 1


MARK = re.compile(r"([0-9]{1,18})-([0-9]{1,6})")


def checkpoint_mark(marks: Path, *, job_id: int, replica_index: int) -> None:
    """Note that this node used the replica's checkpoint (before making it: never one unnoted)."""
    marks.mkdir(mode=FOLDER_MODE, parents=True, exist_ok=True)
    flags = os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC
    os.close(os.open(marks / f"{job_id}-{replica_index}", flags, 0o600))


def checkpoint_marks(marks: Path) -> list[tuple[int, int]]:
    """(job id, replica index) of each checkpoint noted in ``marks``."""
    with contextlib.suppress(FileNotFoundError):
        found = (MARK.fullmatch(name) for name in os.listdir(marks))
        return sorted((int(m[1]), int(m[2])) for m in found if m)
    return []


def checkpoint_unmark(marks: Path, *, job_id: int, replica_index: int) -> None:
    (marks / f"{job_id}-{replica_index}").unlink(missing_ok=True)


def checkpoint_remove(path: Path) -> None:
    """Remove a checkpoint folder and all in it, following no link; a link in its place: the link.

    Gone already (another node removing the same shared folder) is fine.
    """
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return
    if not stat.S_ISDIR(info.st_mode):
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)
        return
    if os.geteuid() != 0:
        os.chmod(path, FOLDER_MODE)  # no boundary without root: the job was the agent's uid
    try:
        top = _open_folder(path)
    except FileNotFoundError:
        return
    try:
        _empty(top)
    finally:
        os.close(top)
    with contextlib.suppress(FileNotFoundError):
        os.rmdir(path)


def _empty(top: int) -> None:
    """Remove everything in the folder open as ``top``, a level at a time.

    Each level holds its descriptor, its name and the folders in it still to
    remove; past ``MAX_DEPTH`` a folder is moved up into ``top`` and removed
    from there, so the descriptors held stay few however deep the tree.
    """
    levels: list[tuple[int, str, list[str]]] = [(top, "", _remove_files(top))]
    while levels:
        fd, name, folders = levels[-1]
        if not folders:
            levels.pop()
            if levels:
                os.close(fd)
                with contextlib.suppress(FileNotFoundError):
                    os.rmdir(name, dir_fd=levels[-1][0])
            continue
        folder = folders.pop()
        if len(levels) >= MAX_DEPTH:
            moved = f".trainyard-removing-{os.urandom(8).hex()}"
            with contextlib.suppress(FileNotFoundError):
                os.rename(folder, moved, src_dir_fd=fd, dst_dir_fd=top)
                levels[0][2].append(moved)
            continue
        try:
            child = _open_folder(folder, dir_fd=fd)
        except FileNotFoundError:
            continue
        except CheckpointRefused:  # swapped for something else: removed as a file
            with contextlib.suppress(FileNotFoundError, IsADirectoryError):
                os.unlink(folder, dir_fd=fd)
            continue
        levels.append((child, folder, _remove_files(child)))


def _remove_files(fd: int) -> list[str]:
    """Unlink every entry of the folder that is not a folder; the folders' names."""
    folders = []
    for name in os.listdir(fd):
        try:
            if stat.S_ISDIR(os.stat(name, dir_fd=fd, follow_symlinks=False).st_mode):
                if os.geteuid() != 0:
                    os.chmod(name, FOLDER_MODE, dir_fd=fd)
                folders.append(name)
            else:
                os.unlink(name, dir_fd=fd)
        except FileNotFoundError:
            continue
    return folders
