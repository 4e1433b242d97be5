"""Where attempts keep their logs and outputs on a node, and how the platform reads them.

Executor-neutral: the local agent writes here, and any other executor that
shares ``TRAINYARD_NODE_ROOT`` (the Slurm backend's ``--output``) can do the
same so that the job page, the download and the API find them.
"""

from __future__ import annotations

import os
import stat
from collections import deque
from dataclasses import dataclass
from pathlib import Path

from jobs.execution.node_name import NODE_NAME
from jobs.execution.node_settings import settings

LOG_NAME = "output.log"
TAIL_BLOCK_BYTES = 64 * 1024
# What a tail reads at most, and the longest line a page shows (by its end, with CUT_MARK).
TAIL_READ_BYTES = 1024 * 1024
MAX_SHOWN_LINE_CHARS = 4096
CUT_MARK = "[… {count} characters cut] "
# Folders and files an output listing looks at, at most, and how many levels down it goes
# (os.walk recurses per level: a job's deeper tree would end the page in a RecursionError).
OUTPUT_WALK_ENTRIES = 2000
OUTPUT_WALK_DEPTH = 64
# Where every Slurm node's attempts, outputs and checkpoints lie: one folder for the whole
# cluster, on the filesystem the platform shares with it, whichever node Slurm picks (a
# folder named for a node would have to be chosen before Slurm chose the node). No node
# can be called this: a node's name starts with a letter or a digit.
SLURM_STORAGE = "_slurm"


def storage_name(node) -> str:
    """The folder under ``TRAINYARD_NODE_ROOT`` that holds a node's attempts and outputs:
    its own name for a local agent's node, ``SLURM_STORAGE`` for any Slurm node and for
    no node (an attempt Slurm has yet to place)."""
    return SLURM_STORAGE if node is None or node.executor == "slurm" else node.name


def executor_of(node) -> str:
    """The executor (``Node.executor``) that runs a replica on ``node``; Slurm's for no
    node: only Slurm places a replica after it was started."""
    return "slurm" if node is None else node.executor


def node_root(node_name: str) -> Path:
    """The folder of a node's attempts and outputs: ``node_name`` is a ``storage_name``."""
    valid = isinstance(node_name, str) and NODE_NAME.fullmatch(node_name)
    if not (valid or node_name == SLURM_STORAGE):
        raise ValueError(f"not a node name: {node_name!r}")
    return Path(settings.TRAINYARD_NODE_ROOT) / node_name


def attempt_dir(node_name: str, attempt_id: int) -> Path:
    return node_root(node_name) / "attempts" / str(attempt_id)


def attempt_log_path(node_name: str, attempt_id: int) -> Path:
    return attempt_dir(node_name, attempt_id) / LOG_NAME


def replica_output_dir(node_name: str, job_id: int, replica_index: int) -> Path:
    """Kept after the job; the same folder for every attempt, so a retry can resume."""
    return node_root(node_name) / "jobs" / str(job_id) / f"replica-{replica_index}" / "output"


def replica_checkpoint_dir(node_name: str, job_id: int, replica_index: int) -> Path:
    """The same folder for every attempt of the replica, wherever it runs when the root is
    shared; removed once the job has ended (``checkpoint_marks_dir``), unless the job keeps
    it (``Job.keep_checkpoint``): then it stays beside the replica's output."""
    shared = settings.TRAINYARD_CHECKPOINT_ROOT
    if shared:
        return Path(shared) / str(job_id) / f"replica-{replica_index}"
    return node_checkpoint_dir(node_name, job_id, replica_index)


def node_checkpoint_dir(node_name: str, job_id: int, replica_index: int) -> Path:
    """Where the checkpoint lives without a shared root: beside the replica's output."""
    return node_root(node_name) / "jobs" / str(job_id) / f"replica-{replica_index}" / "checkpoint"


def checkpoint_root(node_name: str) -> Path:
    """The folder under which a replica's checkpoint and the parents the agent makes lie."""
    shared = settings.TRAINYARD_CHECKPOINT_ROOT
    return Path(shared) if shared else node_root(node_name)


def checkpoint_marks_dir(node_name: str) -> Path:
    """``<job>-<replica>`` for each checkpoint a replica of this node used: what to remove
    (or, kept, to forget) once its job has ended (the agent's poll)."""
    return node_root(node_name) / "checkpoints"


def log_tail(path: Path, *, lines: int) -> str:
    """The last ``lines`` lines of a log, read from its end in bounded time and memory.

    A job controls its log: at most ``TAIL_READ_BYTES`` are read whatever it
    wrote, and a line longer than ``MAX_SHOWN_LINE_CHARS`` is shown by its end
    with a marker (``shown_line``). The download stays whole.
    """
    if lines <= 0:
        return ""
    blocks: list[bytes] = []
    newlines = read = 0
    try:
        with path.open("rb") as handle:
            position = handle.seek(0, os.SEEK_END)
            while position > 0 and newlines <= lines and read < TAIL_READ_BYTES:
                step = min(TAIL_BLOCK_BYTES, position)
                position -= step
                handle.seek(position)
                blocks.append(handle.read(step))
                newlines += blocks[-1].count(b"\n")
                read += step
    except FileNotFoundError:
        return ""
    text = b"".join(reversed(blocks)).decode("utf-8", errors="replace")
    found = text.splitlines()[-lines:]
    if found and position > 0 and len(found) == len(text.splitlines()):
        found[0] = CUT_MARK.format(count=f"{position:,}+") + found[0]
    return "\n".join(shown_line(line) for line in found)


# What a search of a log reads at most (its end): a job controls how much it writes.
SEARCH_READ_BYTES = 16 * 1024 * 1024


@dataclass(frozen=True)
class LogSearch:
    lines: list[str]  # the last matching lines, as a page shows them
    count: int  # how many lines matched in what was read
    partial: bool  # the log is longer than SEARCH_READ_BYTES: only its end was read


def log_search(path: Path, needle: str, *, lines: int) -> LogSearch:
    """The last ``lines`` lines of a log holding ``needle`` (any case), from its last
    ``SEARCH_READ_BYTES`` at most."""
    wanted = needle.casefold()
    found: deque[str] = deque(maxlen=max(lines, 0))
    count = 0
    try:
        with path.open("rb") as handle:
            size = handle.seek(0, os.SEEK_END)
            start = max(size - SEARCH_READ_BYTES, 0)
            handle.seek(start)
            if start:
                handle.readline()  # a line cut by the window is not searched
            for raw in handle:
                line = raw.decode("utf-8", errors="replace").rstrip("\n")
                if wanted in line.casefold():
                    count += 1
                    found.append(shown_line(line))
    except FileNotFoundError:
        return LogSearch([], 0, False)
    return LogSearch(list(found), count, start > 0)


def shown_line(line: str) -> str:
    """A line as a page shows it: its last ``MAX_SHOWN_LINE_CHARS`` characters at most."""
    if len(line) <= MAX_SHOWN_LINE_CHARS:
        return line
    cut = len(line) - MAX_SHOWN_LINE_CHARS
    if line.startswith("[… "):  # already cut at the start of the window: say both
        return CUT_MARK.format(count=f"{cut:,}+") + line[-MAX_SHOWN_LINE_CHARS:]
    return CUT_MARK.format(count=f"{cut:,}") + line[-MAX_SHOWN_LINE_CHARS:]


def log_read(path: Path, *, offset: int, max_bytes: int, complete: bool) -> tuple[list[str], int]:
    """Whole lines of a log from byte ``offset`` (at most ``max_bytes``) and where to read next.

    A line still being written waits for the next read, unless the writer has ended
    (``complete``) or the line alone fills ``max_bytes`` (then it comes in pieces,
    each shown by ``shown_line``).
    """
    try:
        with path.open("rb") as handle:
            handle.seek(offset)
            data = handle.read(max_bytes)
    except FileNotFoundError:
        return [], offset
    if complete and len(data) < max_bytes:
        end = len(data)
    else:
        end = data.rfind(b"\n") + 1 or (len(data) if len(data) == max_bytes else 0)
    text = data[:end].decode("utf-8", errors="replace")
    return [shown_line(line) for line in text.splitlines()], offset + end


@dataclass(frozen=True)
class OutputFile:
    relative_path: str
    size_bytes: int


def output_files(root: Path, *, limit: int = 1000) -> list[OutputFile]:
    """Regular files under an output folder; symbolic links are never followed.

    A job controls what it writes there, so a link to a platform file must not
    make the web server read that file, and the walk looks at no more than
    ``OUTPUT_WALK_ENTRIES`` folders and files, ``OUTPUT_WALK_DEPTH`` levels down,
    however many it made.
    """
    found: list[OutputFile] = []
    entries = 0
    for directory, dirnames, filenames in os.walk(root, followlinks=False):
        entries += 1 + len(filenames)
        if entries > OUTPUT_WALK_ENTRIES:
            break
        if len(Path(directory).relative_to(root).parts) >= OUTPUT_WALK_DEPTH:
            dirnames.clear()
        dirnames.sort()
        for name in sorted(filenames):
            path = Path(directory) / name
            try:
                info = path.lstat()
            except OSError:  # gone since the walk listed it
                continue
            if stat.S_ISREG(info.st_mode):
                found.append(OutputFile(str(path.relative_to(root)), info.st_size))
                if len(found) >= limit:
                    return found
    return found


def open_output_file(root: Path, relative_path: str):
    """Open the regular file ``relative_path`` under ``root`` for reading, or return None.

    Walks one component at a time with ``O_NOFOLLOW`` relative to the folder
    already opened, so a job that swaps a folder for a link while we look
    cannot lead the server out of its output folder.
    """
    parts = Path(relative_path).parts
    if not parts or relative_path.startswith("/") or any(p in ("..", ".") for p in parts):
        return None
    if "\x00" in relative_path:
        return None
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC
    try:
        fd = os.open(root, flags | os.O_DIRECTORY)
    except OSError:
        return None
    try:
        for part in parts[:-1]:
            next_fd = os.open(part, flags | os.O_DIRECTORY, dir_fd=fd)
            os.close(fd)
            fd = next_fd
        file_fd = os.open(parts[-1], flags | os.O_NONBLOCK, dir_fd=fd)
    except OSError:
        return None
    finally:
        os.close(fd)
    if not stat.S_ISREG(os.fstat(file_fd).st_mode):
        os.close(file_fd)
        return None
    return os.fdopen(file_fd, "rb")
