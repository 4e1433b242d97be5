"""The replica supervisor: a detached process that outlives the agent.

Run as ``python -I -S runner.py <attempt folder>`` (standard library only, no
Django, so it starts fast). It detaches into its own session, takes the
folder's ``run.lock`` for as long as it lives (the agent's liveness check, safe
against pid reuse), runs each phase of the attempt as its own process group
with the attempt's limits, and writes what happened into the folder:
``started.json``, ``phase-<name>.json``, ``current.json`` (the process group to
signal) and finally ``exit.json``. A second runner for the same folder finds
the lock taken, or ``exit.json`` written, and leaves at once: a start message
delivered twice starts one process.

The job writes its outputs and log on the node's disk, and may fill it: the
runner holds ``space.reserve`` while the replica runs and deletes it before
writing the end, so that ``exit.json`` still fits on a full disk.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import resource
import signal
import subprocess
import sys
import threading
import time
from datetime import UTC, datetime
from pathlib import Path

PR_SET_PDEATHSIG = 1
RESERVE_NAME = "space.reserve"
RESERVE_BYTES = 256 * 1024
# How often the storage watch looks: the overrun is what the job writes in this long.
STORAGE_WATCH_SECONDS = 1.0
STORAGE_NAME = "storage.json"
# The sandbox's own tmpfs on the host's root, which count as the job's storage; an image's
# sandbox has more (``sandbox.IMAGE_SCRATCH``), and the spec names them.
HOST_SCRATCH = ("/tmp", "/dev/shm")


def now_iso() -> str:
    return datetime.now(UTC).isoformat()


def write_json(path: Path, data: dict) -> None:
    """Write atomically, following no link: readers see the old file or the whole new one.

    The partial file has a name no one can know in advance and is created with
    ``O_EXCL | O_NOFOLLOW``, so a link planted in the folder is never written
    through; the rename then replaces whatever ``path`` was, a link included.
    """
    partial = path.with_name(f".{path.name}.{os.getpid()}.{os.urandom(6).hex()}")
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    fd = os.open(partial, flags, 0o600)
    try:
        with os.fdopen(fd, "w") as handle:
            json.dump(data, handle)
        os.replace(partial, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(partial)
        raise


def read_json(path: Path) -> dict | None:
    """A state file's content, or None when absent; a link is never followed."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
    except FileNotFoundError:
        return None
    with os.fdopen(fd) as handle:
        return json.load(handle)


def take_lock(folder: Path) -> int | None:
    fd = os.open(folder / "run.lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return None
    return fd


def limits_for(spec: dict):
    """What the child applies to itself between fork and exec."""
    import ctypes  # here, not above: every Slurm replica's keeper imports this module

    libc = ctypes.CDLL(None, use_errno=True)
    cgroup, memory_bytes = spec.get("cgroup"), spec.get("memory_bytes")
    cpus, sandboxed = spec.get("cpus"), spec.get("sandboxed")
    # Counted per uid: only meaningful when the replica has a uid of its own.
    max_processes = spec.get("max_processes") if spec.get("uid") is not None else None

    def apply() -> None:
        if cgroup:
            with open(os.path.join(cgroup, "cgroup.procs"), "w") as procs:
                procs.write("0")
        elif memory_bytes:
            resource.setrlimit(resource.RLIMIT_AS, (memory_bytes, memory_bytes))
        if max_processes:
            # Root (bwrap) is exempt; the job's uid is held to it once setpriv drops to it.
            resource.setrlimit(resource.RLIMIT_NPROC, (max_processes, max_processes))
        if cpus:
            os.sched_setaffinity(0, cpus)
        if not sandboxed:
            # bwrap --die-with-parent does this inside the sandbox.
            libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)

    return apply


def hide_sandbox_arguments(argv: list[str]) -> tuple[list[str], int | None]:
    """bwrap's arguments through ``--args`` (a memfd), so /proc shows the job no host path.

    Inside the sandbox, /proc/1/cmdline is bwrap's: with every mount spelled
    out it named the host's node folder, which a job once used to plant a
    node folder of its own.
    """
    span = bwrap_options(argv)
    if span is None:
        return argv, None
    at, command = span
    fd = os.memfd_create("bwrap-args", os.MFD_CLOEXEC)
    os.write(fd, nul_joined(argv[at:command]))
    os.lseek(fd, 0, os.SEEK_SET)
    return [*argv[:at], "--args", str(fd), *argv[command:]], fd


def bwrap_options(argv: list[str]) -> tuple[int, int] | None:
    """Where bwrap's options start and end in ``argv``; None without bwrap.

    The options go through ``--args``; the command after them (setpriv or
    bash: never a path) stays on the command line.
    """
    names = [os.path.basename(arg) for arg in argv]
    if "bwrap" not in names:
        return None
    at = names.index("bwrap") + 1
    return at, next(i for i in range(at, len(argv)) if argv[i] in ("setpriv", "bash"))


def nul_joined(arguments: list[str]) -> bytes:
    return b"".join(arg.encode() + b"\0" for arg in arguments)


def run_phase(folder: Path, spec: dict, phase: dict, log_fd: int, first: bool) -> int:
    env = spec["env"]
    if phase.get("deadline_seconds"):
        # Whole seconds, rounded down: the job sees at most a second less than it has.
        deadline = int(time.time() + phase["deadline_seconds"])
        env = {**env, "TRAINYARD_DEADLINE": str(deadline)}
    argv, args_fd = hide_sandbox_arguments(phase["argv"])
    process = subprocess.Popen(
        argv,
        pass_fds=(args_fd,) if args_fd is not None else (),
        env=env,
        cwd=spec.get("cwd", "/"),
        stdin=subprocess.DEVNULL,
        stdout=log_fd,
        stderr=log_fd,
        process_group=0,
        preexec_fn=limits_for(spec),
    )
    if args_fd is not None:
        os.close(args_fd)
    started = {"started_at": now_iso(), "pgid": process.pid, "runner_pid": os.getpid()}
    try:
        if first:
            write_json(folder / "started.json", started)
        write_json(folder / f"phase-{phase['name']}.json", started)
        write_json(folder / "current.json", {"phase": phase["name"], **started})
    except OSError:
        # Unrecorded, the agent could neither report nor stop it: it must not run.
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
        raise
    stop_watch = threading.Event()
    if spec.get("storage"):
        threading.Thread(
            target=watch_storage, args=(folder, spec["storage"], process, stop_watch), daemon=True
        ).start()
    returncode = process.wait()
    stop_watch.set()
    # Nothing the phase left behind outlives it: its group, and whatever left the group
    # (setsid) but not the attempt's cgroup. bwrap's PID namespace does this in the sandbox.
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)
    kill_cgroup(spec.get("cgroup"))
    return returncode


def kill_cgroup(cgroup: str | None, rounds: int = 50) -> None:
    """SIGKILL every process of the cgroup until none is left (a fork may race one round)."""
    if not cgroup:
        return
    for _ in range(rounds):
        try:
            pids = [int(pid) for pid in Path(cgroup, "cgroup.procs").read_text().split()]
        except OSError:
            return
        if not pids:
            return
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.01)


def watch_storage(folder: Path, storage: dict, process, stop: threading.Event) -> None:
    """End the phase once its output, checkpoint, /tmp and /dev/shm hold more than its storage.

    The job's own supervisor walks its files, so however many it makes, only
    its own watch slows down. Over the limit, ``storage.json`` says by how much
    and the phase is killed; the agent reports "Storage limit exceeded".
    """
    limit = storage["limit_bytes"]
    while not stop.wait(STORAGE_WATCH_SECONDS):
        scratch = storage.get("scratch") or HOST_SCRATCH
        used = sum(map(tree_bytes, storage_folders(storage)))
        used += sandbox_tmp_bytes(process.pid, scratch)
        if used > limit:
            write_json(folder / STORAGE_NAME, {"used_bytes": used, "limit_bytes": limit})
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            return


def storage_folders(storage: dict) -> list[Path]:
    """The folders a job writes on the node's disk: its output, and its checkpoint if any."""
    return [Path(storage[name]) for name in ("output", "checkpoint") if storage.get(name)]


def tree_bytes(root: Path) -> int:
    """Disk blocks under ``root`` (links not followed), without recursion."""
    total, folders = 0, [str(root)]
    while folders:
        with contextlib.suppress(OSError), os.scandir(folders.pop()) as entries:
            for entry in entries:
                with contextlib.suppress(OSError):
                    info = entry.stat(follow_symlinks=False)
                    total += info.st_blocks * 512
                    if entry.is_dir(follow_symlinks=False):
                        folders.append(entry.path)
    return total


def sandbox_tmp_bytes(leader: int, scratch=HOST_SCRATCH) -> int:
    """What the sandbox's tmpfs (``scratch``) hold, seen through its init's root."""
    try:
        children = Path(f"/proc/{leader}/task/{leader}/children").read_text().split()
    except OSError:
        return 0
    total = 0
    for child in children[:1]:
        for mount in scratch:
            with contextlib.suppress(OSError):
                info = os.statvfs(f"/proc/{child}/root/{mount.lstrip('/')}")
                total += (info.f_blocks - info.f_bfree) * info.f_frsize
    return total


def describe(returncode: int) -> tuple[int, str]:
    if returncode < 0:
        name = signal.Signals(-returncode).name
        return 128 - returncode, f"killed by {name}"
    if returncode > 128 and returncode - 128 in signal.valid_signals():
        return returncode, f"exit code {returncode} ({signal.Signals(returncode - 128).name})"
    return returncode, f"exit code {returncode}"


def reserve_space(folder: Path) -> None:
    """Hold a little of the disk, written out (a sparse file would hold nothing)."""
    with contextlib.suppress(OSError), (folder / RESERVE_NAME).open("wb") as reserve:
        reserve.write(b"\0" * RESERVE_BYTES)
        reserve.flush()
        os.fsync(reserve.fileno())


def log_line(log_fd: int, text: str) -> None:
    """A line of our own in the replica's log; a full disk must not stop the runner."""
    with contextlib.suppress(OSError):
        os.write(log_fd, f"[trainyard] {text}\n".encode())


def supervise(folder: Path) -> None:
    if (folder / "exit.json").exists():
        return
    spec = json.loads((folder / "spec.json").read_text())
    for signum in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
        # A handler, not SIG_IGN: children get the default action back at exec.
        signal.signal(signum, lambda *_: None)
    reserve_space(folder)
    log_fd = os.open(spec["log"], os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o640)
    exit_code, summary = 0, "exit code 0"
    for position, phase in enumerate(spec["phases"]):
        if position and (folder / "stop.json").exists():
            break
        try:
            returncode = run_phase(folder, spec, phase, log_fd, position == 0)
        except OSError as error:
            log_line(log_fd, f"could not start the replica: {error}")
            returncode = 127
        exit_code, summary = describe(returncode)
        if exit_code:
            break
    (folder / RESERVE_NAME).unlink(missing_ok=True)
    log_line(log_fd, f"replica finished: {summary}")
    write_json(
        folder / "exit.json", {"exit_code": exit_code, "summary": summary, "ended_at": now_iso()}
    )


def main(folder: Path) -> None:
    if os.fork():
        os._exit(0)  # the caller waits for this parent; the child is re-parented
    os.setsid()
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1):
        os.dup2(devnull, fd)
    lock_fd = take_lock(folder)
    if lock_fd is None:
        os._exit(0)
    try:
        supervise(folder)
    except BaseException:
        import traceback  # here, not above: every Slurm replica's keeper imports this module

        traceback.print_exc()  # into runner.err; the agent reports the attempt lost
        os._exit(1)
    os._exit(0)


if __name__ == "__main__":
    main(Path(sys.argv[1]))
