"""The host NVIDIA driver files a job in an image needs, as the toolkit's CDI specs list them.

An image carries CUDA's user-space libraries but never the driver's: those must
match the kernel module of the node. The NVIDIA container toolkit (not packaged
in Debian 12) injects the device nodes and the driver's libraries and tools into
each container; this does the same from ``ldconfig``'s cache: each library below
that the host has, by its soname, is bound read-only into the sandbox's
``GPU_DRIVER_DIR`` (``sandbox.py``), which leads the job's ``LD_LIBRARY_PATH``;
the tools lead nothing and follow its ``PATH``. Only a node with ``/dev/nvidia*``
gets any of it.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

# The driver's libraries (nvidia-container-toolkit's "compute" and "utility" capabilities).
DRIVER_LIBRARIES = (
    "libcuda.so",
    "libcudadebugger.so",
    "libnvidia-ml.so",
    "libnvidia-ptxjitcompiler.so",
    "libnvidia-nvvm.so",
    "libnvidia-opencl.so",
    "libnvidia-gpucomp.so",
    "libnvidia-cfg.so",
    "libnvidia-allocator.so",
    "libnvidia-pkcs11.so",
    "libnvidia-pkcs11-openssl3.so",
)
DRIVER_TOOLS = ("nvidia-smi", "nvidia-debugdump", "nvidia-cuda-mps-control")
LDCONFIG_LINE = re.compile(r"^\s*(\S+) \(([^)]*)\) => (/\S+)$")


def gpu_driver_files() -> list[str]:
    """Host paths of the driver's libraries (by soname) and tools; none without a card."""
    if not any(Path("/dev").glob("nvidia[0-9]*")):
        return []
    try:
        cache = subprocess.run(
            ["ldconfig", "-p"], capture_output=True, text=True, timeout=10, check=True
        ).stdout
    except (OSError, subprocess.SubprocessError):
        cache = ""
    tools = [shutil.which(name) for name in DRIVER_TOOLS]
    return driver_libraries(cache) + [tool for tool in tools if tool]


def driver_libraries(ldconfig_cache: str) -> list[str]:
    """The 64-bit driver libraries in ``ldconfig -p``'s output, one path per soname."""
    found: dict[str, str] = {}
    for line in ldconfig_cache.splitlines():
        match = LDCONFIG_LINE.match(line)
        if not match or "x86-64" not in match[2] and "AArch64" not in match[2]:
            continue
        soname, path = match[1], match[3]
        if soname.split(".so")[0] + ".so" in DRIVER_LIBRARIES and ".so." in soname:
            found.setdefault(soname, path)
    return sorted(found.values(), key=lambda path: Path(path).name)
