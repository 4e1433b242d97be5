"""The demo's two real OCI images, built here from Debian's packages and PyPI.

``make run`` seeds a project whose jobs run in ``trainyard/python:3.11`` and
``trainyard/pytorch:2.13-cpu``. No public container registry can be reached from
where Trainyard is developed and shown, but Debian's mirror and PyPI can, so:

- ``python3``: Debian 12 (bookworm) made by ``mmdebstrap``: its essential set plus
  bash, util-linux (the ``setpriv`` every job runs under), python3 with its ``python``
  command (python-is-python3), ca-certificates and libstdc++6, without apt's lists, docs,
  man pages or locales. One layer.
- ``pytorch-cpu``: that image plus one layer of CPU PyTorch and its runtime
  dependencies at exact pins, put by ``pip --target`` in
  ``/usr/local/lib/python3.11/dist-packages``, which Debian's python3.11 reads.

``umoci`` makes each an OCI image layout; the PyTorch image's layout hard-links
the Python image's layer blob, so both share it. A build is made in a private
folder under a per-recipe lock, checked by running its smoke test inside it as a
job would, and renamed into ``cache_dir/<key>-<fingerprint>/`` (the layout in
``oci/``, what was built in ``build.json``): a killed build leaves nothing a
later call trusts. ``python jobs/images/demo_recipes.py CACHE_DIR`` builds all.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import IO

RECIPE_VERSION = 1  # bump when a change here changes what the images hold
SUITE = "bookworm"
ARCHITECTURE = "amd64"
APT_SOURCES = (  # this machine's own mirror (/etc/apt/sources.list.d/debian.sources)
    "deb http://deb.debian.org/debian bookworm main",
    "deb http://deb.debian.org/debian bookworm-updates main",
    "deb http://deb.debian.org/debian-security bookworm-security main",
)
DPKG_OPTIONS = (
    "path-exclude=/usr/share/doc/*",
    "path-include=/usr/share/doc/*/copyright",
    "path-exclude=/usr/share/man/*",
    "path-exclude=/usr/share/info/*",
    "path-exclude=/usr/share/locale/*",
    "path-include=/usr/share/locale/locale.alias",
)
SOURCE_DATE_EPOCH = 1747699200  # 2025-05-20: the Debian files' times and every image date
CREATED = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(SOURCE_DATE_EPOCH))
PIP_TARGET_PLATFORM = (  # wheels for the image's python3.11, whichever Python runs pip
    "--only-binary=:all:",
    "--platform=manylinux_2_28_x86_64",
    "--python-version=3.11",
    "--implementation=cp",
    "--abi=cp311",
)
SITE_PACKAGES = "usr/local/lib/python3.11/dist-packages"
IMAGE_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
AS_A_JOB = ("setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "bash", "-c")
TOOL_TIMEOUT_SECONDS = 1800
ERROR_LINES = 20

Log = Callable[[str], object]


class DemoImageError(Exception):
    """A demo image that could not be built; the message ends with the failing tool's words."""


@dataclass(frozen=True)
class Recipe:
    name: str  # what the image is called, ``repository:tag``
    key: str  # a short slug: the cache folder's and the lock's name
    description: str
    smoke_test: str  # a bash command that must succeed in the image, run as a job runs
    debian_packages: tuple[str, ...] = ()  # a Debian image's packages beyond the essential set
    pip_pins: tuple[str, ...] = ()  # a layered image's packages, each ``name==version``
    base: Recipe | None = None  # the image a layered one adds its layer to

    @property
    def tag(self) -> str:
        return self.name.rpartition(":")[2]


PYTHON3 = Recipe(
    name="trainyard/python:3.11",
    key="python3",
    description="Debian 12 (bookworm) with Python 3.11, bash, coreutils and util-linux",
    smoke_test="python -c 'import ssl, sqlite3' && python3 --version && setpriv --version",
    # libstdc++6: the C++ runtime manylinux wheels (torch) expect; apt brings it elsewhere.
    # python-is-python3: ``python``, which researchers' commands call, not only ``python3``.
    debian_packages=(
        "bash",
        "coreutils",
        "util-linux",
        "python3",
        "python-is-python3",
        "ca-certificates",
        "libstdc++6",
    ),
)
PYTORCH_CPU = Recipe(
    name="trainyard/pytorch:2.13-cpu",
    key="pytorch-cpu",
    description="trainyard/python:3.11 with CPU PyTorch 2.13.0 and NumPy",
    smoke_test="python -c 'import torch; assert torch.ones(2).sum() == 2'",
    pip_pins=(  # requirements.lock's pins; torch's CPU build, never a CUDA one
        "torch==2.13.0+cpu",
        "filelock==4.3.1",
        "fsspec==2026.9.0",
        "Jinja2==3.1.6",
        "MarkupSafe==3.0.4",
        "mpmath==1.3.0",
        "networkx==3.6.1",
        "setuptools==84.2.1",
        "sympy==1.14.0",
        "typing_extensions==4.16.0",
        "numpy==2.4.6",  # not torch's requirement, but without it each import of torch warns
    ),
    base=PYTHON3,
)
DEMO_RECIPES: tuple[Recipe, ...] = (PYTHON3, PYTORCH_CPU)


def recipe_fingerprint(recipe: Recipe) -> str:
    """A hash of everything that decides what the image holds, its base recipe's too."""
    facts = {
        "recipe_version": RECIPE_VERSION,
        "suite": SUITE,
        "architecture": ARCHITECTURE,
        "apt_sources": APT_SOURCES,
        "dpkg_options": DPKG_OPTIONS,
        "source_date_epoch": SOURCE_DATE_EPOCH,
        "pip_target_platform": PIP_TARGET_PLATFORM,
        "site_packages": SITE_PACKAGES,
        "recipe": asdict(recipe),
    }
    return hashlib.sha256(json.dumps(facts, sort_keys=True).encode()).hexdigest()


def build_demo_image(recipe: Recipe, *, cache_dir: Path, log: Log = print) -> tuple[Path, str]:
    """The OCI layout and tag of ``recipe``'s image, built into ``cache_dir`` unless there."""
    cache_dir.mkdir(parents=True, exist_ok=True)
    entry = cache_dir / f"{recipe.key}-{recipe_fingerprint(recipe)[:16]}"
    if not (entry / "build.json").is_file():
        with _recipe_lock(cache_dir, recipe.key):
            if not (entry / "build.json").is_file():
                _build_entry(recipe, cache_dir, entry, log)
    return entry / "oci", recipe.tag


@contextlib.contextmanager
def _recipe_lock(cache_dir: Path, key: str) -> Iterator[None]:
    with (cache_dir / f".{key}.lock").open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def _build_entry(recipe: Recipe, cache_dir: Path, entry: Path, log: Log) -> None:
    """Build in a private folder and rename it into place; no half build is left behind."""
    for stale in cache_dir.glob(f".build-{recipe.key}-*"):  # a killed build's: ours is the lock
        shutil.rmtree(stale, ignore_errors=True)
    started = time.monotonic()
    work = Path(tempfile.mkdtemp(prefix=f".build-{recipe.key}-", dir=cache_dir))
    try:
        if recipe.base is None:
            _build_debian_image(recipe, work, log)
        else:
            _build_layered_image(recipe, cache_dir, work, log)
        _run(["umoci", "gc", "--layout", str(work / "oci")])
        _smoke_test(recipe, work, log)
        _write_record(recipe, work, time.monotonic() - started)
        os.chmod(work, 0o755)
        os.rename(work, entry)
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)
        raise
    log(f"{recipe.name}: built in {time.monotonic() - started:.0f} s into {entry}")


def _build_debian_image(recipe: Recipe, work: Path, log: Log) -> None:
    layout, debian, layer = work / "oci", work / "debian.tar", work / "layer.tar"
    log(f"{recipe.name}: Debian {SUITE} with {', '.join(recipe.debian_packages)} (mmdebstrap)")
    python_version = _debootstrap(recipe, debian)
    with debian.open("rb") as source, layer.open("wb") as target:
        # No device nodes in the layer: a runtime mounts its own /dev.
        _run(["mmtarfilter", "--path-exclude=/dev/*"], stdin=source, stdout=target)
    debian.unlink()
    _run(["umoci", "init", "--layout", str(layout)])
    _run(["umoci", "new", "--image", f"{layout}:{recipe.tag}"])
    made_by = f"mmdebstrap --variant=essential --include={','.join(recipe.debian_packages)}"
    _add_layer(layout, recipe.tag, recipe.tag, layer, f"{made_by} {SUITE}")
    env = [f"PATH={IMAGE_PATH}", "LANG=C.UTF-8", f"PYTHON_VERSION={python_version}"]
    _configure(recipe, layout, [f"--config.env={item}" for item in env] + ["--config.cmd=python3"])


def _debootstrap(recipe: Recipe, tarball: Path) -> str:
    """Debian into ``tarball``; returns the version of Python it holds."""
    version_file = tarball.with_name("python-version")
    hooks = (
        'rm "$1/etc/resolv.conf" "$1/etc/hostname"',  # the building host's own
        'chroot "$1" python3 -c "import platform; print(platform.python_version())"'
        f" > {shlex.quote(str(version_file))}",
    )
    _run(
        ["mmdebstrap", "--variant=essential", f"--architectures={ARCHITECTURE}"]
        + [f"--include={','.join(recipe.debian_packages)}"]
        # merged /usr without the usrmerge package (and the perl it would pull in)
        + ["--hook-dir=/usr/share/mmdebstrap/hooks/merged-usr"]
        + [f"--dpkgopt={option}" for option in DPKG_OPTIONS]
        + [f"--customize-hook={hook}" for hook in hooks]
        + [SUITE, str(tarball), *APT_SOURCES],
        env={**os.environ, "SOURCE_DATE_EPOCH": str(SOURCE_DATE_EPOCH)},
    )
    version = version_file.read_text().strip()
    version_file.unlink()
    return version


def _build_layered_image(recipe: Recipe, cache_dir: Path, work: Path, log: Log) -> None:
    assert recipe.base is not None
    base_layout, base_tag = build_demo_image(recipe.base, cache_dir=cache_dir, log=log)
    layout, layer = work / "oci", work / "layer.tar"
    shutil.copytree(base_layout / "blobs", layout / "blobs", copy_function=os.link)  # shared
    for name in ("oci-layout", "index.json"):  # copies: umoci rewrites the index
        shutil.copy2(base_layout / name, layout / name)
    log(f"{recipe.name}: {' '.join(recipe.pip_pins)} (pip --target)")
    _pip_install_tree(recipe.pip_pins, work / "layer")
    _run(
        ["tar", "--create", f"--file={layer}", f"--directory={work / 'layer'}", "--sort=name"]
        + ["--numeric-owner", "--owner=0", "--group=0", "--mode=u+rwX,go+rX,go-w"]
        + ["--format=pax", "."]
    )
    shutil.rmtree(work / "layer")
    _add_layer(layout, base_tag, recipe.tag, layer, f"pip install {' '.join(recipe.pip_pins)}")
    base_label = f"--config.label=org.opencontainers.image.base.name={recipe.base.name}"
    _configure(recipe, layout, [base_label])
    _run(["umoci", "rm", "--image", f"{layout}:{base_tag}"])


def _pip_install_tree(pins: tuple[str, ...], root: Path) -> None:
    """``pins`` installed into ``root`` as the image's /, their scripts in /usr/local/bin."""
    target, scripts = root / SITE_PACKAGES, root / "usr/local/bin"
    venv_pip = Path(__file__).resolve().parents[2] / ".venv/bin/pip"
    pip = [str(venv_pip)] if venv_pip.exists() else [sys.executable, "-m", "pip"]
    _run([*pip, "install", "--no-deps", *PIP_TARGET_PLATFORM, f"--target={target}", *pins])
    scripts.mkdir(parents=True)
    for script in sorted((target / "bin").glob("*")):
        _move_script(script, scripts / script.name)
    shutil.rmtree(target / "bin", ignore_errors=True)
    shutil.rmtree(target / "share", ignore_errors=True)  # man pages


def _move_script(script: Path, destination: Path) -> None:
    """A pip script, its ``#!`` aimed at the image's python3 instead of the building one."""
    first, _newline, rest = script.read_bytes().partition(b"\n")
    if first.startswith(b"#!") and b"python" in first:
        first = b"#!/usr/bin/python3"
    destination.write_bytes(first + b"\n" + rest)
    destination.chmod(0o755)
    script.unlink()


def _add_layer(layout: Path, from_tag: str, to_tag: str, tarball: Path, made_by: str) -> None:
    _run(
        ["umoci", "raw", "add-layer", "--image", f"{layout}:{from_tag}", f"--tag={to_tag}"]
        + [f"--history.created={CREATED}", f"--history.created_by={made_by}", str(tarball)]
    )
    tarball.unlink()


def _configure(recipe: Recipe, layout: Path, options: list[str]) -> None:
    facts = {
        "org.opencontainers.image.title": recipe.name,
        "org.opencontainers.image.description": recipe.description,
        "org.opencontainers.image.version": recipe.tag,
        "org.opencontainers.image.created": CREATED,
        "org.trainyard.recipe.fingerprint": recipe_fingerprint(recipe),
    }
    _run(
        ["umoci", "config", "--image", f"{layout}:{recipe.tag}", "--no-history"]
        + [f"--created={CREATED}", "--config.workingdir=/", *options]
        + [f"--config.label={name}={value}" for name, value in facts.items()]
        + [f"--manifest.annotation={name}={value}" for name, value in facts.items()]
    )


def _smoke_test(recipe: Recipe, work: Path, log: Log) -> None:
    """``recipe.smoke_test`` run in the unpacked image as a job runs: setpriv, then bash."""
    if os.geteuid() != 0:
        log(f"{recipe.name}: smoke test skipped (setpriv needs root)")
        return
    rootfs = work / "smoke"
    try:
        _run(["umoci", "raw", "unpack", "--image", f"{work / 'oci'}:{recipe.tag}", str(rootfs)])
        image_env = {"PATH": IMAGE_PATH, "LANG": "C.UTF-8"}
        sandbox = ["bwrap", "--ro-bind", str(rootfs), "/", "--proc", "/proc", "--dev", "/dev"]
        _run([*sandbox, *AS_A_JOB, recipe.smoke_test], env=image_env)
    finally:
        shutil.rmtree(rootfs, ignore_errors=True)


def _write_record(recipe: Recipe, work: Path, seconds: float) -> None:
    """``build.json``: the image's manifest digest and layers, for whoever stores it."""
    layout = work / "oci"
    index = json.loads((layout / "index.json").read_text())
    (descriptor,) = index["manifests"]  # the one image: the layout's only tag
    manifest = json.loads(
        (layout / "blobs/sha256" / descriptor["digest"].removeprefix("sha256:")).read_text()
    )
    record = {
        "name": recipe.name,
        "tag": recipe.tag,
        "fingerprint": recipe_fingerprint(recipe),
        "manifest_digest": descriptor["digest"],
        "layers": [{"digest": item["digest"], "size": item["size"]} for item in manifest["layers"]],
        "build_seconds": round(seconds, 1),
    }
    (work / "build.json").write_text(json.dumps(record, indent=2) + "\n")


def _run(
    args: list[str],
    *,
    stdin: IO[bytes] | int = subprocess.DEVNULL,
    stdout: IO[bytes] | int = subprocess.PIPE,
    env: dict[str, str] | None = None,
) -> None:
    """Run a build tool; its failure is a ``DemoImageError`` that ends with its last words."""
    try:
        done = subprocess.run(
            args,
            stdin=stdin,
            stdout=stdout,
            stderr=subprocess.PIPE,
            env=env,
            timeout=TOOL_TIMEOUT_SECONDS,
            check=False,
        )
    except FileNotFoundError:
        raise DemoImageError(
            f"{args[0]} is not installed (Debian: apt-get install {args[0]})"
        ) from None
    except subprocess.TimeoutExpired:
        raise DemoImageError(
            f"{shlex.join(args[:3])} … ran over {TOOL_TIMEOUT_SECONDS} s"
        ) from None
    if done.returncode:
        words = (done.stderr or done.stdout or b"").decode(errors="replace").strip()
        tail = "\n".join(words.splitlines()[-ERROR_LINES:]) or "(no output)"
        raise DemoImageError(f"{shlex.join(args[:3])} … failed ({done.returncode}):\n{tail}")


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(f"usage: {argv[0]} CACHE_DIR", file=sys.stderr)
        return 2
    for recipe in DEMO_RECIPES:
        started = time.monotonic()
        try:
            layout, tag = build_demo_image(recipe, cache_dir=Path(argv[1]))
        except DemoImageError as error:
            print(f"{recipe.name}: {error}", file=sys.stderr)
            return 1
        print(f"{recipe.name}: {layout}:{tag} ({time.monotonic() - started:.1f} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
