"""What an image in the store holds: its size, layers, and the Python, CUDA and PyTorch in it.

Read from the manifest and config (sizes, ``Env``) and from the layers' file
lists, streamed without unpacking: an official image says ``PYTHON_VERSION`` or
``CUDA_VERSION`` in its ``Env``; any other is known by its files
(``usr/bin/python3.11``, ``libcudart.so.12.4``, ``torch-2.13.0.dist-info``).
"""

from __future__ import annotations

import re
import tarfile
from dataclasses import dataclass
from pathlib import Path

from jobs.execution.replica.image_cache import blob_path, image_manifest_and_config

PYTHON_FILE = re.compile(r"^(?:\./)?usr/(?:local/)?bin/python(3\.\d+)$")
CUDA_FILES = (
    re.compile(r"^(?:\./)?usr/local/cuda-(\d+\.\d+)/"),
    re.compile(r"/libcudart\.so\.(\d+\.\d+)"),
    re.compile(r"/nvidia_cuda_runtime_cu\d+-(\d+\.\d+)[\d.]*\.dist-info/"),
)
TORCH_FILE = re.compile(r"/(?:site|dist)-packages/torch-([0-9][^/]*?)\.dist-info/")


@dataclass
class ImageFacts:
    size_bytes: int
    layers: list[dict]
    python_version: str = ""
    cuda_version: str = ""
    torch_version: str = ""


def image_facts(layout: Path, digest: str) -> ImageFacts:
    """What ``digest`` holds; ``ImageError`` if its manifest or config is not what it says."""
    manifest, config = image_manifest_and_config(layout=layout, digest=digest)
    layers = [{"digest": item["digest"], "size": int(item["size"])} for item in manifest["layers"]]
    facts = ImageFacts(
        size_bytes=sum(layer["size"] for layer in layers) + int(manifest["config"]["size"]),
        layers=layers,
    )
    env = (config.get("config") or {}).get("Env") or []
    variables = dict(item.partition("=")[::2] for item in env)
    pythons: set[str] = set()
    cudas: set[str] = set()
    torches: set[str] = set()
    for layer in layers:
        for name in _layer_names(layout, layer["digest"]):
            _match_into(PYTHON_FILE, name, pythons)
            for pattern in CUDA_FILES:
                _match_into(pattern, name, cudas)
            _match_into(TORCH_FILE, name, torches)
    facts.python_version = variables.get("PYTHON_VERSION") or _highest(pythons)
    facts.cuda_version = variables.get("CUDA_VERSION") or _highest(cudas)
    facts.torch_version = _highest(torches)
    return facts


def _match_into(pattern: re.Pattern, name: str, found: set[str]) -> None:
    match = pattern.search(name)
    if match:
        found.add(match[1])


def _highest(versions: set[str]) -> str:
    def key(version: str) -> tuple:
        return tuple(int(part) if part.isdigit() else 0 for part in re.split(r"[.+]", version))

    return max(versions, key=key) if versions else ""


def _layer_names(layout: Path, digest: str):
    """The paths in a layer (gzip, zstd-less, or plain tar), streamed."""
    path = blob_path(layout, digest)
    try:
        with tarfile.open(path, mode="r|*") as layer:
            for member in layer:
                yield member.name
    except (tarfile.TarError, OSError, EOFError):
        return
