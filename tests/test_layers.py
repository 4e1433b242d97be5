"""The import layers between the apps (``[tool.importlinter]`` in pyproject.toml).

An import that runs back up a layer fails here with the contract it breaks and
the import chain; the way back up is a signal or a task sent by name
(docs/internals.md, "Layers").
"""

from __future__ import annotations

import os
import pkgutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
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


@pytest.mark.parametrize("package", ["trainyard", "billing"])
def test_every_module_of_a_split_app_has_its_layer(package):
    """trainyard and billing are split between layers by module: a new module must say where."""
    layered = layered_modules()
    modules = {f"{package}.{info.name}" for info in pkgutil.iter_modules([str(ROOT / package)])}
    assert modules - layered == set(), "add these to a layer in pyproject.toml"
