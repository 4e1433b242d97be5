"""A Slurm replica's keeper: its slot, network and sandbox on its node, while it runs.

The Slurm job runs ``<python> -I -S keeper.py <attempt folder>`` on each of its
nodes, as root (``sudo -n`` where Slurm runs the job as another account; see
the README's production section). The keeper does on the node what the local
agent does before its runner starts (``jobs/execution/agent/isolation.py``), from
``keeper.json``, which the platform wrote in a folder only root may write:

1. no sandbox, no job: where the node cannot isolate (no bubblewrap, no job
   network) it writes ``refused.json`` and exits 1, and the replica's command
   never runs;
2. it takes a host-wide slot (uid and job address, ``slots.py``) and holds
   its lease while it lives, so no two live replicas on a host share either;
3. it makes the replica's network namespace (``network.py``), publishes its
   open ports and writes ``address.json``;
4. it hands the replica's output and checkpoint (``checkpoint.py``) to the slot's uid,
   and writes each phase's command line (``argv-<phase>``, NUL-separated:
   the namespace, the process limit, bwrap as the slot's uid) with bwrap's
   options in ``bwrap-<phase>.args`` (read through ``--args 9``, so the job's
   ``/proc`` names no host path);
5. it runs the replica script (``scripts.py``) as its child, passing on
   Slurm's TERM and USR1, lets the replica accept its gang once the other
   replicas' ``address.json`` appear, and holds the job to its storage as
   the local runner does (``storage.json``);
6. when the script ends it removes the network and gives back the slot, and
   exits with the script's status. Killed instead, it leaves both to the next
   replica that takes the slot (``network._remove_stale``, the lease's lock).

No database and no Django: the few settings ``keeper.json`` carries
(``NODE_SETTINGS``), configured in ``jobs/execution/node_settings.py``, are all that
the runtime reads here. So the project's modules are imported inside the functions, once
``main`` has put the project on ``sys.path`` and configured those settings: never at
the top of this script.
"""

from __future__ import annotations

import contextlib
import ipaddress
import os
import signal
import stat
import subprocess
import sys
import threading
from pathlib import Path

# State files in the attempt folder, by AttemptFolder's names (``<name>.json``).
PLAN = "keeper"
REFUSED = "refused"
ADDRESS = "address"
ARGS_FD = 9
GANG_POLL_SECONDS = 0.2
STOP_MARK = "stop.json"  # written by the platform (``slurm.submit.remember_stop``)
# What the node's part of the runtime reads from Django's settings.
NODE_SETTINGS = (
    "TRAINYARD_SANDBOX",
    "TRAINYARD_JOB_BRIDGE",
    "TRAINYARD_JOB_SUBNET",
    "TRAINYARD_SANDBOX_UID_BASE",
    "TRAINYARD_SANDBOX_UID_COUNT",
    "TRAINYARD_HOST_RUN_DIR",
    "TRAINYARD_IMAGE_STORE",
    "TRAINYARD_IMAGE_CACHE",
    "TRAINYARD_IMAGE_CACHE_GIB",
)
PROJECT_ROOT = Path(__file__).resolve().parents[3]


def keeper_plan(
    *,
    attempt_id: int,
    node_settings: dict,
    mounts,
    phases: list[tuple[str, Path]],
    log: Path,
    script: str,
    storage_bytes: int,
    max_processes: int,
    scratch: list[str],
    published: dict[int, int] | None = None,
    peers: list[Path] | None = None,
    image: dict | None = None,
) -> dict:
    """``keeper.json``: what ``main`` reads, as the platform writes it for one replica.

    ``mounts``: the replica's ``sandbox.Mounts``; ``phases``: (name, command file) in
    order; ``node_settings``: the values of ``NODE_SETTINGS``; ``image``: its digest and
    name (``image_root.image_plan``), or None for the node's own system as ``/``."""
    return {
        "attempt_id": attempt_id,
        "settings": {k: str(v) if isinstance(v, Path) else v for k, v in node_settings.items()},
        "published": {str(host): inside for host, inside in (published or {}).items()},
        "peers": [str(peer) for peer in peers or []],
        "mounts": {
            "code": str(mounts.code) if mounts.code else None,
            "output": str(mounts.output),
            "checkpoint": str(mounts.checkpoint),
            "datasets": [str(p) for p in mounts.datasets],
            "pretrained": [str(p) for p in mounts.pretrained],
            "read_only_extra": mounts.read_only_extra,
        },
        "phases": [{"name": name, "command_file": str(path)} for name, path in phases],
        "image": {"digest": image["digest"], "name": image["name"]} if image else None,
        "scratch": scratch,
        "tmp_bytes": storage_bytes,
        "storage_bytes": storage_bytes,
        "max_processes": max_processes,
        "log": str(log),
        "script": script,
    }


def keeper_argv(python: str, folder: Path) -> list[str]:
    """How the Slurm job starts the keeper: ``-I``, so nothing of the job's account leaks in;
    ``-S``, for it imports nothing but the standard library and the project, whose path
    ``main`` puts first: ``site`` (its ``.pth`` files, the editable install's finder) would
    be most of an interpreter's start, on every replica."""
    return [python, "-I", "-S", str(Path(__file__).resolve()), str(folder)]


def main(folder: Path, node: str) -> int:
    """Keep the replica whose attempt folder is ``folder`` on ``node``, the Slurm node it
    runs on (``$SLURMD_NODENAME``, passed by the batch script: the plan names no node)."""
    # Run as a script (``python -I -S keeper.py``), not imported: every import below waits
    # until sys.path holds the project and Django's settings are configured from the plan.
    sys.path[:1] = [str(PROJECT_ROOT)]  # the project, not this folder, is where imports start
    from jobs.execution.replica.runner import read_json

    plan = read_json(folder / f"{PLAN}.json")
    if plan is None:
        print(f"[trainyard] no {PLAN}.json in {folder}", file=sys.stderr)
        return 1
    from jobs.execution.node_settings import settings

    settings.configure(plan["settings"])
    from jobs.execution.node_name import NODE_NAME

    plan["node"] = node if NODE_NAME.fullmatch(node) else "node"
    from jobs.execution.replica import host_network, network, sandbox, slots

    problem = "the isolation helper does not run as root" if os.geteuid() else None
    problem = problem or sandbox.sandbox_problem()
    run_dir = Path(settings.TRAINYARD_HOST_RUN_DIR)
    problem = problem or host_network.recent_host_problem(run_dir, sandbox.PROBLEM_CACHE_SECONDS)
    if problem:
        return refuse(folder, plan, kind="isolation", problem=problem)
    try:
        slot = slots.take_slot(
            owner=f"slurm attempt {plan['attempt_id']}",
            start=plan["attempt_id"] % slots.slot_count(),
        )
    except slots.NoFreeSlot as error:
        return refuse(folder, plan, kind="slots", problem=str(error))
    replica_network = network.ReplicaNetwork(
        namespace=network.namespace_name(slot.number, plan["attempt_id"]),
        slot=slot.number,
        address=slot.address,
        published={int(host): int(inside) for host, inside in plan["published"].items()},
    )
    try:
        network.replica_network_up(replica_network)
    except network.NetworkError as error:
        slot.close()
        return refuse(folder, plan, kind="network", problem=str(error))
    from jobs.execution.replica.image_error import ImageError

    image = plan.get("image") or {}
    try:
        prepare_phases(folder, plan, slot.uid, replica_network)
        return run_script(folder, plan, replica_network)
    except ImageError as error:
        return refuse(folder, plan, kind="image", problem=str(error), node_fault=error.node_fault)
    finally:
        if image:
            from jobs.execution.replica.image_root import attempt_image_release

            attempt_image_release(digest=image.get("digest"), attempt_id=plan["attempt_id"])
        network.replica_network_down(replica_network)
        slot.close()


def refuse(folder: Path, plan: dict, *, kind: str, problem: str, node_fault: bool = True) -> int:
    from jobs.execution.replica.runner import log_line, write_json

    refusal = {"kind": kind, "problem": problem, "node_fault": node_fault, "node": plan["node"]}
    write_json(folder / f"{REFUSED}.json", refusal)
    log_fd = _open_log(plan)
    if kind == "image":
        log_line(log_fd, f"replica not started: its image cannot be used: {problem}")
    else:
        log_line(log_fd, f"replica not started: node {plan['node']} cannot isolate it: {problem}")
    os.close(log_fd)
    return 1


def prepare_phases(folder: Path, plan: dict, uid: int, replica_network) -> None:
    """Each phase's command line for the replica script, and its files for the slot's uid."""
    from jobs.execution.replica import network, sandbox
    from jobs.execution.replica.checkpoint import checkpoint_hand_over
    from jobs.execution.replica.runner import bwrap_options, log_line, nul_joined, write_json

    checkpoint = plan["mounts"].get("checkpoint")
    mounts = sandbox.Mounts(
        code=Path(plan["mounts"]["code"]) if plan["mounts"]["code"] else None,
        output=Path(plan["mounts"]["output"]),
        checkpoint=Path(checkpoint) if checkpoint else None,
        datasets=[Path(p) for p in plan["mounts"]["datasets"]],
        pretrained=[Path(p) for p in plan["mounts"]["pretrained"]],
        read_only_extra=list(plan["mounts"]["read_only_extra"]),
    )
    _give(mounts.output, uid, folder=False)
    if mounts.checkpoint:
        checkpoint_hand_over(mounts.checkpoint, uid)
    if plan.get("image"):
        _image_mounts(folder, plan, mounts)
    processes = plan["max_processes"]
    for phase in plan["phases"]:
        command_file = folder / Path(phase["command_file"]).name
        _give(command_file, uid, folder=True)
        argv = [
            "prlimit",
            f"--nproc={processes}:{processes}",
            "--",
            *network.enter_argv(replica_network),
            *sandbox.bwrap_argv(
                bwrap=sandbox.bwrap_path(),
                mounts=mounts,
                command_file=command_file,
                uid=uid,
                tmp_bytes=plan["tmp_bytes"],
                hostname=plan["node"],
            ),
        ]
        at, command = bwrap_options(argv)
        _write_private(folder / f"bwrap-{phase['name']}.args", nul_joined(argv[at:command]))
        argv = [*argv[:at], "--args", str(ARGS_FD), *argv[command:]]
        _write_private(folder / f"argv-{phase['name']}", nul_joined(argv))
    write_json(folder / f"{ADDRESS}.json", {"address": replica_network.address})
    log_fd = _open_log(plan)
    log_line(
        log_fd,
        f"bubblewrap sandbox, own network {replica_network.address}, uid {uid}, "
        f"processes {processes}, memory and cpus: Slurm's own limits; "
        + (
            f"image {plan['image']['name']} as /"
            if plan.get("image")
            else "the node's own system as /"
        ),
    )
    os.close(log_fd)


def _image_mounts(folder: Path, plan: dict, mounts) -> None:
    """The job's image unpacked in this node's cache as the sandbox's root (ImageError if not)."""
    from jobs.execution.replica.gpu_driver import gpu_driver_files
    from jobs.execution.replica.image_root import attempt_image_prepare
    from jobs.execution.replica.runner import log_line

    def progress(done: int, total: int) -> None:
        log_fd = _open_log(plan)
        log_line(
            log_fd,
            f"preparing image {plan['image']['name']} ({done // 10**6} of {total // 10**6} MB)",
        )
        os.close(log_fd)

    image = attempt_image_prepare(
        digest=plan["image"]["digest"], attempt_id=plan["attempt_id"], progress=progress
    )
    mounts.image_root, mounts.read_only_extra = image.rootfs, []
    mounts.gpu_driver = gpu_driver_files()


def run_script(folder: Path, plan: dict, replica_network) -> int:
    """The replica script as a child; Slurm's signals passed on; its status returned."""
    child = subprocess.Popen(["/bin/bash", "--noprofile", "--norc", str(folder / plan["script"])])

    def pass_on(signum, _frame) -> None:
        with contextlib.suppress(ProcessLookupError):
            child.send_signal(signum)

    for signum in (signal.SIGTERM, signal.SIGUSR1, signal.SIGINT, signal.SIGHUP):
        signal.signal(signum, pass_on)
    done = threading.Event()
    peers = [Path(p) for p in plan["peers"]]
    if peers:
        threading.Thread(
            target=watch_gang, args=(replica_network, peers, done), daemon=True
        ).start()
    threading.Thread(
        target=watch_storage, args=(folder, plan, child.pid, done), daemon=True
    ).start()
    threading.Thread(target=watch_stop, args=(folder, child, done), daemon=True).start()
    returncode = child.wait()
    done.set()
    return 128 - returncode if returncode < 0 else returncode


def watch_stop(folder: Path, child: subprocess.Popen, done: threading.Event) -> None:
    """A stop (or a preemption) is the platform's mark in the attempt folder, not Slurm's
    signal: Slurm's TERM reaches every process of the job, the sandbox too, which kills the
    job before its handler can save. The replica script passes this TERM to the phase's
    processes, sparing the sandbox; the KILL after the grace is Slurm's (``scancel``)."""
    while not done.wait(GANG_POLL_SECONDS):
        if (folder / STOP_MARK).exists():
            with contextlib.suppress(ProcessLookupError):
                child.send_signal(signal.SIGTERM)
            return


def watch_gang(replica_network, peers: list[Path], done: threading.Event) -> None:
    """Accept each other replica of the gang once its keeper has written where it lives."""
    from jobs.execution.replica import network
    from jobs.execution.replica.runner import read_json

    while not done.wait(GANG_POLL_SECONDS):
        addresses = []
        for peer in peers:
            with contextlib.suppress(OSError, ValueError, KeyError, TypeError):
                written = read_json(peer / f"{ADDRESS}.json")
                addresses.append(str(ipaddress.IPv4Address(written["address"])))
        with contextlib.suppress(network.NetworkError):
            network.set_gang(replica_network, addresses)
        if len(addresses) == len(peers):
            return


def watch_storage(folder: Path, plan: dict, script_pid: int, done: threading.Event) -> None:
    """As the local runner's watch: output, checkpoint, /tmp and /dev/shm together, within
    the storage.

    Over the limit, ``storage.json`` says by how much and the phase's sandbox is
    killed; the replica script then ends, and the tracking pass reports why.
    """
    from jobs.execution.replica.runner import (
        HOST_SCRATCH,
        STORAGE_NAME,
        STORAGE_WATCH_SECONDS,
        sandbox_tmp_bytes,
        storage_folders,
        tree_bytes,
        write_json,
    )

    limit, folders = plan["storage_bytes"], storage_folders(plan["mounts"])
    while not done.wait(STORAGE_WATCH_SECONDS):
        sandboxes = outer_sandboxes(script_pid)
        scratch = plan.get("scratch") or HOST_SCRATCH
        used = sum(map(tree_bytes, folders))
        used += sum(sandbox_tmp_bytes(pid, scratch) for pid in sandboxes)
        if used > limit:
            write_json(folder / STORAGE_NAME, {"used_bytes": used, "limit_bytes": limit})
            for pid in sandboxes:  # bwrap --die-with-parent takes everything inside along
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            return


def outer_sandboxes(pid: int) -> list[int]:
    """The bwrap processes under ``pid`` that are not themselves under a bwrap."""
    found, pending = [], [pid]
    while pending:
        current = pending.pop()
        try:
            children = Path(f"/proc/{current}/task/{current}/children").read_text().split()
            name = Path(f"/proc/{current}/comm").read_text().strip()
        except OSError:
            continue
        if name == "bwrap" and current != pid:
            found.append(current)
            continue  # its own children are the sandbox's
        pending += [int(child) for child in children]
    return found


def _give(path: Path, uid: int, *, folder: bool) -> None:
    """Hand the replica's output folder, or a command file of this folder, to its uid.

    Never through a link, and only what it should be: a directory, or a
    regular file in the attempt folder.
    """
    info = os.lstat(path)
    expected = stat.S_ISREG(info.st_mode) if folder else stat.S_ISDIR(info.st_mode)
    if not expected:
        raise OSError(f"{path} is not the replica's {'command file' if folder else 'output'}")
    os.chown(path, uid, uid, follow_symlinks=False)


def _open_log(plan: dict) -> int:
    flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC
    return os.open(plan["log"], flags, 0o600)


def _write_private(path: Path, data: bytes) -> None:
    with contextlib.suppress(FileNotFoundError):
        path.unlink()
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    with os.fdopen(fd, "wb") as handle:
        handle.write(data)


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1]), sys.argv[2] if len(sys.argv) > 2 else ""))
