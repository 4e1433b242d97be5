"""Build an OCI image from an admin's Containerfile with buildah: offline, as root, no daemon.

As tried with Debian 12's buildah 1.28.2, as root in a VM whose cgroups are in hybrid mode:

* Storage: buildah's own store under ``work_dir`` (``--root``, ``--runroot``, and a storage.conf
  of ours so the host's adds no image stores), removed after the build. ``overlay`` where
  ``buildah info`` starts it (it does here, on overlayfs too), else ``vfs`` (full copies).
* Isolation ``chroot``: ``--isolation oci`` runs crun, which refuses here ("cgroups in hybrid
  mode not supported"); chroot needs no runtime and no daemon.
* Network: buildah refuses ``--network none`` with chroot ("cannot set --network other than host
  with --isolation chroot"), so it runs under ``unshare --net --mount --pid``: RUN steps see only
  a loopback that is down ("Network is unreachable") and only buildah's processes (chroot alone
  shares the host's PIDs), buildah reaches no registry, and its mounts end with it, so its store
  can be removed even after a timeout.
* Bases: FROM names become ``oci:<layout>:<tag>``. buildah 1.28 names such an image
  ``localhost/<layout path>``, which must be a lowercase reference, so each base gets a mirror
  (its index, its blobs symlinked) under ``work_dir``, whose path must be one too.
* Result: ``bud`` commits to the store and ``push`` writes ``<work_dir>/image`` (new layers
  gzipped). The layout is started with each base blob hard-linked under its layer's diff_id, so
  push finds that digest there and skips the layer instead of recompressing the base; the manifest
  then gets the base's own descriptors back, so a store holding the base keeps one copy of it.
"""

from __future__ import annotations

import collections
import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path

from jobs.execution.replica.image_cache import blob_path

TAG = "latest"
TAIL_LINES = 15
BUILT = "localhost/trainyard-build:latest"
# RUN steps get no network, see no process but buildah's, and buildah's mounts end with it.
UNSHARE = ["unshare", "--net", "--mount", "--pid", "--fork", "--kill-child", "--mount-proc"]
_REF_PATH = re.compile(r"(/[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*)+")
_URL = re.compile(r"^(?:[a-z][a-z0-9+.-]*://|git@)", re.I)


class BuildError(Exception):
    """A Containerfile that was refused or did not build; the message says why."""


def build_containerfile(
    *,
    containerfile: str,
    context: Path | None,
    bases: dict[str, tuple[Path, str]],
    work_dir: Path,
    timeout_s: int = 1800,
    log: Callable[[str], object] = print,
) -> tuple[Path, str]:
    """Build the Containerfile text; FROM lines may only name images in `bases`
    (name -> (OCI layout path, tag)) or `scratch`; returns (OCI layout path, tag) of the result
    under work_dir."""
    deadline = time.monotonic() + timeout_s
    work = Path(work_dir).resolve()
    if not _REF_PATH.fullmatch(str(work)) or len(str(work)) > 200:
        raise BuildError("the work folder's path must be lowercase letters, digits and . _ - only")
    mirrors = {name: work / "bases" / f"b{i}" for i, name in enumerate(bases)}
    text, used = _rewrite(containerfile, {n: f"oci:{mirrors[n]}:{bases[n][1]}" for n in bases})
    out, state = work / "image", work / "buildah"
    for folder in (out, state, work / "bases"):
        shutil.rmtree(folder, ignore_errors=True)
    try:
        for name in used:
            _mirror(Path(bases[name][0]), bases[name][1], mirrors[name])
        (state / "tmp").mkdir(parents=True)
        (state / "empty").mkdir()
        (state / "Containerfile").write_text(text)
        env = {**os.environ, "TMPDIR": f"{state}/tmp", "CONTAINERS_STORAGE_CONF": f"{state}/conf"}
        buildah = _buildah(state, env)
        log(f"buildah: storage driver {buildah[-1]}, isolation chroot, no network")
        ctx = Path(context).resolve() if context is not None else state / "empty"
        hide = {str(work): "<work>", str(ctx): "<context>"}
        run = [*buildah, "bud", "--isolation", "chroot", "--pull=never", "--format", "oci"]
        run += ["--tag", BUILT, "--file", f"{state}/Containerfile", str(ctx)]
        _run(run, env, deadline, log, hide)
        used_bases = [(n, Path(bases[n][0]), bases[n][1], mirrors[n]) for n in used]
        layers, names = _link_base_layers(out, used_bases)
        _run([*buildah, "push", BUILT, f"oci:{out}:{TAG}"], env, deadline, log, hide)
        _share_base_layers(out, layers, names)
    finally:
        shutil.rmtree(state, ignore_errors=True)
        shutil.rmtree(work / "bases", ignore_errors=True)
    return out, TAG


def _rewrite(containerfile: str, refs: dict[str, str]) -> tuple[str, list[str]]:
    """One instruction a line, FROM names mapped to their layouts; refuses what reaches out."""
    if re.search(r"^\s*#\s*escape\s*=", containerfile, re.M | re.I):
        raise BuildError("the escape parser directive is not supported")
    # Comment and blank lines go first, inside continuations too; then lines are joined.
    kept = [line for line in containerfile.splitlines() if not re.match(r"\s*(#|$)", line)]
    instructions = re.sub(r"\\[ \t]*\n", "", "\n".join(kept)).splitlines()
    out, used, stages = [], [], set()
    for line in instructions:
        keyword, *args = line.split()
        keyword, flags, refuse = keyword.upper(), [a for a in args if a.startswith("--")], ""
        if keyword == "FROM":
            staged = len(args) == 3 and args[1].upper() == "AS"
            if flags or "$" in line or not (len(args) == 1 or staged):
                refuse = "FROM takes one image name, an optional AS name, no flags or variables"
            elif args[0].lower() not in stages and args[0] != "scratch":
                if args[0] not in refs:
                    refuse = "FROM names an image that is not a base here"
                used += [] if args[0] in used else [args[0]]
                line = " ".join(["FROM", refs.get(args[0], ""), *args[1:]])
            stages |= {args[2].lower()} if staged else set()
        elif keyword == "ONBUILD":
            refuse = "ONBUILD is not allowed"
        elif keyword == "RUN" and args and args[0].startswith("--"):
            refuse = "RUN takes no flags here (--mount, --network, --security)"
        elif keyword in ("COPY", "ADD"):
            froms = [f.partition("=")[2] for f in flags if f.startswith("--from")]
            if any(f.lower() not in stages and not f.isdigit() for f in froms):
                refuse = "COPY --from must name an earlier stage"
            if keyword == "ADD" and any(_URL.match(a.strip('[",')) for a in args):
                refuse = "ADD cannot fetch from the network here"
        if refuse:
            raise BuildError(f"{refuse}: {' '.join([keyword, *args])}")
        out.append(line)
    return "\n".join(out) + "\n", used


def _mirror(layout: Path, tag: str, mirror: Path) -> None:
    """A layout at `mirror`: `layout`'s index, links to its blobs, at a path buildah can name."""
    if not (layout / "index.json").is_file():
        raise BuildError(f"a base is not an OCI layout: {layout.name}")
    _manifest(layout, tag)
    (mirror / "blobs" / "sha256").mkdir(parents=True)
    for name in ("oci-layout", "index.json"):
        shutil.copyfile(layout / name, mirror / name)
    for blob in (layout / "blobs" / "sha256").iterdir():
        (mirror / "blobs" / "sha256" / blob.name).symlink_to(blob.resolve())


def _buildah(state: Path, env: dict[str, str]) -> list[str]:
    """buildah's command line on its own store: overlay where it starts, else vfs."""
    for driver in ("overlay", "vfs"):
        conf = f'driver = "{driver}"\nrunroot = "{state}/run"\ngraphroot = "{state}/root"\n'
        (state / "conf").write_text("[storage]\n" + conf)
        root = ["--root", f"{state}/root", "--runroot", f"{state}/run", "--storage-driver", driver]
        buildah = [*UNSHARE, "buildah", *root]
        if subprocess.run([*buildah, "info"], env=env, capture_output=True).returncode == 0:
            break
        shutil.rmtree(state / "root", ignore_errors=True)
    return buildah


def _run(cmd: list[str], env: dict, deadline: float, log: Callable, hide: dict) -> None:
    """Run `cmd`, passing its output lines to `log`; BuildError with its last lines if it fails."""
    tail: collections.deque[str] = collections.deque(maxlen=TAIL_LINES)
    pipe = {"stdout": subprocess.PIPE, "stderr": subprocess.STDOUT, "stdin": subprocess.DEVNULL}
    # A process group of its own, so that a timeout ends the RUN steps' processes too.
    proc = subprocess.Popen(cmd, env=env, text=True, errors="replace", **pipe, process_group=0)
    left = max(deadline - time.monotonic(), 0)
    timer = threading.Timer(left, os.killpg, (proc.pid, signal.SIGKILL))
    timer.start()
    try:
        for line in proc.stdout or ():
            for path, mark in sorted(hide.items(), key=lambda kv: -len(kv[0])):
                line = line.replace(path, mark)
            tail.append(line.rstrip())
            log(tail[-1])
        rc = proc.wait()
    finally:
        timer.cancel()
        if proc.poll() is None:  # `log` raised
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    what = f"buildah {cmd[cmd.index('--storage-driver') + 2]}"
    if rc == -signal.SIGKILL and time.monotonic() >= deadline:
        raise BuildError(f"{what} ran past the build's time limit:\n" + "\n".join(tail))
    if rc != 0:
        raise BuildError(f"{what} failed (exit {rc}):\n" + "\n".join(tail))


def _manifest(layout: Path, tag: str | None) -> tuple[dict, dict]:
    for desc in json.loads((layout / "index.json").read_text())["manifests"]:
        if tag in (None, desc.get("annotations", {}).get("org.opencontainers.image.ref.name")):
            return desc, _json(layout, desc["digest"])
    raise BuildError(f"a base layout has no image tagged {tag}")


def _json(layout: Path, digest: str) -> dict:
    return json.loads(blob_path(layout, digest).read_text())


def _put(layout: Path, data: dict) -> dict[str, object]:
    raw = json.dumps(data, separators=(",", ":")).encode()
    blob_path(layout, digest := "sha256:" + hashlib.sha256(raw).hexdigest()).write_bytes(raw)
    return {"digest": digest, "size": len(raw)}


def _link_base_layers(out: Path, used: list[tuple[str, Path, str, Path]]) -> tuple[dict, dict]:
    """Start the result's layout with each base blob linked under its diff_id (see above)."""
    layers, names = {}, {}
    (out / "blobs" / "sha256").mkdir(parents=True)
    (out / "oci-layout").write_text('{"imageLayoutVersion":"1.0.0"}')
    (out / "index.json").write_text('{"schemaVersion":2,"manifests":[]}')
    for name, layout, tag, mirror in used:
        desc, manifest = _manifest(layout, tag)
        names[desc["digest"]] = names[f"localhost{mirror}:latest"] = name
        diff_ids = _json(layout, manifest["config"]["digest"])["rootfs"]["diff_ids"]
        for diff_id, layer in zip(diff_ids, manifest["layers"], strict=True):
            layers[diff_id], source = layer, blob_path(layout, layer["digest"]).resolve()
            if not blob_path(out, diff_id).exists():
                try:
                    os.link(source, blob_path(out, diff_id))
                except OSError:
                    shutil.copyfile(source, blob_path(out, diff_id))
    return layers, names


def _share_base_layers(out: Path, layers: dict, names: dict) -> None:
    """Give the result's base layers the base's own blobs; name the base, not its mirror."""
    desc, manifest = _manifest(out, None)
    config = _json(out, manifest["config"]["digest"])
    for i, diff_id in enumerate(config["rootfs"]["diff_ids"]):
        if diff_id in layers:
            manifest["layers"][i] = layers[diff_id]
            if not blob_path(out, layers[diff_id]["digest"]).exists():
                os.rename(blob_path(out, diff_id), blob_path(out, layers[diff_id]["digest"]))
    notes = manifest.get("annotations", {})
    if (base := notes.get("org.opencontainers.image.base.digest")) in names:
        notes["org.opencontainers.image.base.name"] = names[base]
    for entry in config.get("history", []):
        for ref, name in names.items():
            if "comment" in entry:
                entry["comment"] = entry["comment"].replace(ref, name)
    manifest["config"].update(_put(out, config))
    desc.update(_put(out, manifest))
    (out / "index.json").write_text(json.dumps({"schemaVersion": 2, "manifests": [desc]}))
    keep = {d["digest"] for d in [desc, manifest["config"], *manifest["layers"]]}
    for blob in (out / "blobs" / "sha256").iterdir():
        if f"sha256:{blob.name}" not in keep:
            blob.unlink()
