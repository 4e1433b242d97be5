"""What running a job in its image costs: the first use of an image on a node, then every start.

    sudo .venv/bin/python bench/image_start.py [--starts 100] [--layout DIR --tag TAG]

Needs root and bubblewrap. The image is the demo's PyTorch image where
``make run`` has built it (``var/recipe-builds/pytorch-cpu-*/oci``), or the
layout and tag given, else a tiny test image (``tests/support/tiny_images.py``).
Prints, side by side:

- first use: unpacking the image into an empty node cache (umoci), seconds;
- each start after it, median and p99, of a sandboxed ``true``: as jobs started
  before images (bwrap over the host's root), and in the image (the cache's
  lease and LRU touch, then bwrap with the image's root as ``/``);
- the cache's disk use for the image (its unpacked root).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "trainyard.settings")


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


def demo_image() -> tuple[Path, str] | None:
    for layout in sorted((ROOT / "var" / "recipe-builds").glob("pytorch-cpu-*/oci")):
        return layout, "2.13-cpu"
    return None


def tiny_image(work: Path) -> tuple[Path, str]:
    from tests.support.tiny_images import build_tiny_image

    build_tiny_image(work / "tiny", "a", marker="A", env=["GREETING=hi"], python=True)
    return work / "tiny", "a"


def starts(count: int, work: Path, *, image_root: Path | None, prepare) -> list[float]:
    from jobs.execution.replica import sandbox

    (work / "output").mkdir(exist_ok=True)
    command = work / "command.sh"
    command.write_text("true\n")
    os.chmod(command, 0o644)
    mounts = sandbox.Mounts(
        code=None,
        output=work / "output",
        read_only_extra=[] if image_root else sandbox.python_environment_paths(),
        image_root=image_root,
    )
    argv = sandbox.bwrap_argv(
        bwrap=shutil.which("bwrap"),
        mounts=mounts,
        command_file=command,
        uid=65534,
        tmp_bytes=2**30,
        hostname="bench",
    )
    seconds = []
    for number in range(count):
        begin = time.perf_counter()
        if prepare:
            prepare(number)
        subprocess.run(argv, check=True, env={"PATH": sandbox.BASE_PATH})
        seconds.append(time.perf_counter() - begin)
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--starts", type=int, default=100)
    parser.add_argument("--layout", type=Path)
    parser.add_argument("--tag")
    args = parser.parse_args()
    import django

    django.setup()
    from jobs.execution.replica.image_cache import image_prepare, image_release
    from tests.support.tiny_images import tagged

    work = Path(tempfile.mkdtemp(prefix="image-bench-"))
    os.chmod(work, 0o755)
    try:
        layout, tag = (args.layout, args.tag) if args.layout else demo_image() or tiny_image(work)
        digest = tagged(layout, tag)
        cache = work / "cache"
        begin = time.perf_counter()
        image = image_prepare(cache_root=cache, layout=layout, digest=digest, lease="bench")
        first_use = time.perf_counter() - begin

        def cached(number: int) -> None:
            image_prepare(cache_root=cache, layout=layout, digest=digest, lease=f"s{number}")
            image_release(cache_root=cache, digest=digest, lease=f"s{number}")

        host = starts(args.starts, work, image_root=None, prepare=None)
        inside = starts(args.starts, work, image_root=image.rootfs, prepare=cached)
        du = subprocess.run(["du", "-sb", str(image.rootfs)], capture_output=True, text=True)
        print(f"image {layout}:{tag} ({digest[:19]}…), {args.starts} starts each")
        print(f"first use (unpack into an empty cache): {first_use:.2f} s")
        print(f"{'start of a sandboxed true':42} {'median':>8} {'p99':>8}")
        for label, values in (
            ("host root (before images)", host),
            ("in the image (cached)", inside),
        ):
            median, p99 = statistics.median(values) * 1000, percentile(values, 0.99) * 1000
            print(f"{label:42} {median:6.1f}ms {p99:6.1f}ms")
        ratio = statistics.median(inside) / statistics.median(host)
        print(f"in the image / host root (median): {ratio:.2f}")
        print(f"cache disk use for the image: {int(du.stdout.split()[0]) / 1e6:.1f} MB")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
