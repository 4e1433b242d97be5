"""The command line that runs one phase of a replica: in bubblewrap, or plainly where it is absent.

In the sandbox the host's system is read-only (``/usr``, ``/etc``, the
agent's Python environment), the job's data is bound under ``/trainyard``,
``/tmp`` is a private tmpfs the size of the temporary storage, and the replica
has its own PID, IPC and UTS namespaces and dies with its supervisor. The
network is shared: ports and distributed rendezvous need it.

bwrap runs as root (it needs no user namespace that way) and the last step
inside it, ``setpriv``, drops to the job's unprivileged uid with no
capabilities and ``no_new_privs``. A user namespace alone would not do: uid
65534 inside a namespace created by root is still root to the host's files.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

from jobs.execution.node_settings import settings

from .host_network import host_problem
from .runner import HOST_SCRATCH
from .tools import find_tool

SANDBOX_COMMAND_PATH = "/run/trainyard/command.sh"
SYSTEM_READ_ONLY = ("/usr", "/etc", "/sys")
SYSTEM_LINKS_OR_DIRS = ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
BASE_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
# In an image: what the job may write (a private /dev/shm: PyTorch's DataLoader workers and
# NCCL pass tensors through it); the host's GPU driver files (``gpu_driver.py``).
IMAGE_SCRATCH = (*HOST_SCRATCH, "/root", "/var/tmp")
# /trainyard and /run in an image: tmpfs only for the mount points made under them.
MOUNT_POINTS_TMPFS_BYTES = 1024 * 1024
GPU_DRIVER_DIR = "/run/trainyard/driver"


def scratch_paths(*, in_image: bool) -> list[str]:
    """The sandbox's tmpfs the runner counts as the job's storage (the spec's ``scratch``)."""
    return list(IMAGE_SCRATCH if in_image else HOST_SCRATCH)


def bwrap_path() -> str | None:
    """bwrap if this node may use it (``TRAINYARD_SANDBOX=off`` forces plain processes)."""
    if settings.TRAINYARD_SANDBOX == "off":
        return None
    return find_tool("bwrap")


# The answer changes only when an admin installs something: asked again after this long.
PROBLEM_CACHE_SECONDS = 5.0
_problem_cache: tuple[float, str | None] | None = None


def isolation_problem() -> str | None:
    """Why replicas on this host cannot be isolated (sandbox, uid, network), or None."""
    global _problem_cache
    now = time.monotonic()
    if _problem_cache is None or now - _problem_cache[0] > PROBLEM_CACHE_SECONDS:
        _problem_cache = (now, _isolation_problem())
    return _problem_cache[1]


def _isolation_problem() -> str | None:
    return sandbox_problem() or host_problem()


def sandbox_problem() -> str | None:
    """Why this process cannot sandbox replicas (not root, no bubblewrap), or None."""
    if os.geteuid() != 0:
        return "the agent does not run as root"
    if bwrap_path() is None:
        if settings.TRAINYARD_SANDBOX == "off":
            return "the sandbox is turned off (TRAINYARD_SANDBOX=off)"
        return "bubblewrap is not installed (Debian: apt-get install bubblewrap)"
    return None


def python_environment_paths() -> list[str]:
    """The agent's Python environment, offered read-only to jobs as their interpreter."""
    paths = {str(Path(sys.prefix).resolve()), str(Path(sys.base_prefix).resolve())}
    return sorted(p for p in paths if not any(p.startswith(s) for s in SYSTEM_READ_ONLY))


def job_path_variable() -> str:
    """PATH inside the replica: the agent's Python environment first, then the system."""
    return ":".join([f"{Path(sys.prefix)}/bin", BASE_PATH])


# A plain class, not a dataclass: the keeper imports this module on every replica's start,
# and ``dataclasses`` (with ``inspect``) would be a sixth of the keeper's CPU there.
class Mounts:
    """Host paths a replica sees, keyed by where it sees them."""

    def __init__(
        self,
        *,
        code: Path | None,
        output: Path,
        datasets: list[Path] | None = None,
        pretrained: list[Path] | None = None,
        read_only_extra: list[str] | None = None,
        checkpoint: Path | None = None,
        image_root: Path | None = None,
        gpu_driver: list[str] | None = None,
    ) -> None:
        self.code = code
        self.output = output
        self.datasets = datasets or []
        self.pretrained = pretrained or []
        self.read_only_extra = read_only_extra or []
        # Kept across the job's attempts (``checkpoint.py``), seen as /trainyard/checkpoint.
        self.checkpoint = checkpoint
        # The image's unpacked root (``image_cache.py``), the replica's ``/``; None: the host's.
        self.image_root = image_root
        # The host's GPU driver files, bound under ``GPU_DRIVER_DIR`` in an image.
        self.gpu_driver = gpu_driver or []


def bwrap_argv(
    *,
    bwrap: str,
    mounts: Mounts,
    command_file: Path,
    uid: int | None,
    tmp_bytes: int,
    hostname: str,
) -> list[str]:
    argv = [bwrap, "--die-with-parent", "--unshare-pid", "--unshare-ipc", "--unshare-uts"]
    argv += ["--unshare-cgroup-try", "--hostname", hostname]
    if mounts.image_root:
        argv += _image_root_argv(mounts.image_root, tmp_bytes)
    else:
        argv += _host_root_argv(mounts.read_only_extra, tmp_bytes)
    for device in sorted(Path("/dev").glob("nvidia*")):
        argv += ["--dev-bind", str(device), str(device)]
    if mounts.image_root and mounts.gpu_driver:
        argv += _passable_parents([f"{GPU_DRIVER_DIR}/lib"])
        for path in mounts.gpu_driver:
            argv += ["--ro-bind", path, f"{GPU_DRIVER_DIR}/{Path(path).name}"]
    if mounts.code:
        argv += ["--ro-bind", str(mounts.code), "/trainyard/code"]
    else:
        argv += ["--perms", "0555", "--dir", "/trainyard/code"]
    for position, path in enumerate(mounts.datasets, start=1):
        argv += ["--ro-bind", str(path), f"/trainyard/data-{position}"]
    for position, path in enumerate(mounts.pretrained, start=1):
        argv += ["--ro-bind", str(path), f"/trainyard/pretrained-{position}"]
    argv += ["--bind", str(mounts.output), "/trainyard/output"]
    if mounts.checkpoint:
        argv += ["--bind", str(mounts.checkpoint), "/trainyard/checkpoint"]
    # Folders bwrap creates on its own are 0700 (root's); the job's uid must pass through.
    argv += ["--perms", "0755", "--dir", "/run", "--perms", "0755", "--dir", "/run/trainyard"]
    argv += ["--ro-bind", str(command_file), SANDBOX_COMMAND_PATH, "--chdir", "/"]
    return argv + drop_privileges(uid) + bash_argv(SANDBOX_COMMAND_PATH)


def _host_root_argv(read_only_extra: list[str], tmp_bytes: int) -> list[str]:
    """The host's system read-only, and the agent's Python environment."""
    argv: list[str] = []
    for path in SYSTEM_READ_ONLY:
        argv += ["--ro-bind", path, path]
    for path in SYSTEM_LINKS_OR_DIRS:
        if os.path.islink(path):
            argv += ["--symlink", os.readlink(path), path]
        elif os.path.isdir(path):
            argv += ["--ro-bind", path, path]
    argv += ["--dev", "/dev", "--proc", "/proc"]
    argv += _scratch_argv(HOST_SCRATCH, tmp_bytes)
    # After the private /tmp, so a Python environment that lives under /tmp stays visible.
    argv += _passable_parents(read_only_extra)
    for path in read_only_extra:
        argv += ["--ro-bind", path, path]
    return argv + ["--perms", "0755", "--dir", "/trainyard"]


def _image_root_argv(image_root: Path, tmp_bytes: int) -> list[str]:
    """The image's root read-only as ``/``; the folders a program writes, private tmpfs.

    The mount points exist in every unpacked root (``image_cache.MOUNT_POINTS``);
    ``/trainyard`` and ``/run`` are tmpfs, so that the folders under them can be made.
    """
    argv = ["--ro-bind", str(image_root), "/", "--ro-bind", "/sys", "/sys"]
    argv += ["--dev", "/dev", "--proc", "/proc"]
    argv += _scratch_argv(IMAGE_SCRATCH, tmp_bytes)
    for path in ("/trainyard", "/run"):
        argv += ["--perms", "0755", "--size", str(MOUNT_POINTS_TMPFS_BYTES), "--tmpfs", path]
    return argv


def _scratch_argv(paths: tuple[str, ...], size_bytes: int) -> list[str]:
    """Writable tmpfs for everyone (sticky, as /tmp); the runner counts them as storage."""
    argv: list[str] = []
    for path in paths:
        argv += ["--perms", "1777", "--size", str(size_bytes), "--tmpfs", path]
    return argv


def _passable_parents(paths: list[str]) -> list[str]:
    """Create the parents of extra binds as 0755: bwrap's own are 0700, closed to the job's uid."""
    argv: list[str] = []
    seen: set[str] = set()
    for path in paths:
        for parent in reversed(Path(path).parents[:-1]):
            if str(parent) not in seen:
                seen.add(str(parent))
                argv += ["--perms", "0755", "--dir", str(parent)]
    return argv


def plain_argv(*, command_file: Path, uid: int | None) -> list[str]:
    return drop_privileges(uid) + bash_argv(str(command_file))


def drop_privileges(uid: int | None) -> list[str]:
    if uid is None:
        return []
    return [
        "setpriv",
        f"--reuid={uid}",
        f"--regid={uid}",
        "--clear-groups",
        "--no-new-privs",
        "--inh-caps=-all",
        "--bounding-set=-all",
        "--",
    ]


def bash_argv(path: str) -> list[str]:
    return ["bash", "--noprofile", "--norc", path]
