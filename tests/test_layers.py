"""The import layers between the apps (``[tool.importlinter]`` in pyproject.toml).

An import that runs back up a layer fails here with the contract it breaks and
the import chain; the way back up is a signal or a task sent by name
(docs/internals.md, "Layers").
"""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# The command-line client reaches the platform over HTTP only (its own contract says so).
NOT_LAYERED = {"trainyard_cli", "tests"}
CONFIG = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]


def layered_modules() -> set[str]:
    # The apps' layers: the one layers contract without containers (others order one app).
    (layers,) = [
        c["layers"] for c in CONFIG["contracts"] if c["type"] == "layers" and "containers" not in c
    ]
    return {name.strip() for layer in layers for name in layer.replace("|", ":").split(":")}


def test_no_import_breaks_a_contract():
    lint_imports = Path(sys.executable).parent / "lint-imports"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    result = subprocess.run(
        [str(lint_imports), "--no-cache"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    broken = result.stdout.partition("Broken contracts")[2] or result.stdout + result.stderr
    assert result.returncode == 0, f"lint-imports failed:\nBroken contracts{broken}"


def test_every_app_is_one_whole_layer():
    """A package is a layer, whole: none is split between layers, none is left out.

    So no arrow between two packages can run back up, either: a folder's modules
    all sit on its one layer.
    """
    layered = layered_modules()
    packages = {path.parent.name for path in ROOT.glob("*/__init__.py")} - NOT_LAYERED
    assert {name for name in layered if "." in name} == set(), "a layer is a whole package"
    assert packages == layered, "add the new package to a layer in pyproject.toml"
