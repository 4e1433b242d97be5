"""A Slurm replica's keeper checks its host's job network at most once in the window the
local agent caches the same answer for: the mark of a check that found nothing wrong is
root's, in the host run folder (``host_network.recent_host_problem``)."""

from __future__ import annotations

import os
import stat
import time

import pytest

from jobs.execution.replica import host_network

WINDOW = 5.0


@pytest.fixture
def checks(monkeypatch):
    """The problems the real check will find, in turn (None: none); each call is counted."""
    answers: list[str | None] = []
    calls = []

    def host_problem():
        calls.append(1)
        return answers.pop(0) if answers else None

    monkeypatch.setattr(host_network, "host_problem", host_problem)
    return answers, calls


def test_a_fresh_mark_stands_for_the_check(tmp_path, checks):
    _answers, calls = checks
    assert host_network.recent_host_problem(tmp_path, WINDOW) is None
    assert host_network.recent_host_problem(tmp_path, WINDOW) is None
    assert len(calls) == 1
    [mark] = tmp_path.iterdir()
    assert mark.name == f"host-checked-{host_network.bridge()}"


def test_a_stale_mark_is_checked_again(tmp_path, checks):
    answers, calls = checks
    host_network.recent_host_problem(tmp_path, WINDOW)
    [mark] = tmp_path.iterdir()
    past = time.time() - WINDOW - 1
    os.utime(mark, (past, past))
    problem = "the nftables table inet trainyard is missing"
    answers.append(problem)

    assert host_network.recent_host_problem(tmp_path, WINDOW) == problem
    assert len(calls) == 2


def test_a_problem_leaves_no_mark_and_is_found_every_time(tmp_path, checks):
    answers, calls = checks
    answers += ["the job bridge does not exist"] * 2
    assert host_network.recent_host_problem(tmp_path, WINDOW) == "the job bridge does not exist"
    assert host_network.recent_host_problem(tmp_path, WINDOW) == "the job bridge does not exist"
    assert len(calls) == 2 and not list(tmp_path.iterdir())


@pytest.mark.parametrize("planted", ["link", "future", "other owner"])
def test_a_mark_root_did_not_just_write_is_no_check(tmp_path, checks, planted):
    _answers, calls = checks
    mark = tmp_path / f"host-checked-{host_network.bridge()}"
    if planted == "link":
        (tmp_path / "elsewhere").touch()
        mark.symlink_to(tmp_path / "elsewhere")
    else:
        mark.touch()
        if planted == "future":
            later = time.time() + 3600
            os.utime(mark, (later, later))
        else:
            os.chown(mark, 1000, 1000)

    host_network.recent_host_problem(tmp_path, WINDOW)
    host_network.recent_host_problem(tmp_path, WINDOW)

    assert len(calls) == 1  # checked, then marked afresh
    info = os.lstat(mark)
    assert stat.S_ISREG(info.st_mode) and info.st_uid == 0
    assert abs(info.st_mtime - time.time()) < WINDOW
