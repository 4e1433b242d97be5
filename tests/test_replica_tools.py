"""A node's tools found on PATH as shutil.which finds them (the keeper does without shutil)."""

import shutil

from jobs.execution.replica.tools import find_tool


def test_finds_what_which_finds():
    assert find_tool("bash") == shutil.which("bash") is not None
    assert find_tool("no-such-tool-here") is None


def test_skips_what_cannot_run_and_folders(tmp_path, monkeypatch):
    first, second = tmp_path / "first", tmp_path / "second"
    (first / "nft").mkdir(parents=True)  # a folder named like the tool
    (first / "ip").write_text("")  # not executable
    second.mkdir()
    for name in ("nft", "ip"):
        (second / name).write_text("#!/bin/sh\n")
        (second / name).chmod(0o755)
    monkeypatch.setenv("PATH", f"{first}:{second}")
    assert find_tool("nft") == str(second / "nft")
    assert find_tool("ip") == str(second / "ip")
