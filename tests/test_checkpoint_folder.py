"""A replica's checkpoint folder on disk: made, handed to each attempt's uid, removed.

What is in the folder was written by a hostile job: a link to a host file, a hard
link to one, a tree deeper than any walk should hold open. Each test builds what such
a job left (as root, as the job's earlier attempt would have, owned by its slot uid),
runs the agent's own code on it and checks that nothing outside changed hands or went.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
from django.conf import settings

from jobs.execution.replica.checkpoint import (
    MAX_DEPTH,
    CheckpointRefused,
    checkpoint_hand_over,
    checkpoint_mark,
    checkpoint_marks,
    checkpoint_prepare,
    checkpoint_remove,
    checkpoint_unmark,
)

OTHER_USER = 4242  # not a slot uid: a person on the host


def slot_uid(number: int) -> int:
    return settings.TRAINYARD_SANDBOX_UID_BASE + number


def owner(path: Path) -> int:
    return os.lstat(path).st_uid


def owned(path: Path, uid: int) -> Path:
    os.chown(path, uid, uid, follow_symlinks=False)
    return path


@pytest.fixture
def host(tmp_path):
    """Files outside the checkpoint, on the same filesystem (so a hard link can reach them)."""
    folder = tmp_path / "host"
    folder.mkdir()
    secret = folder / "secret.conf"  # root's
    secret.write_text("x")
    other = folder / "other-user.txt"
    other.write_text("y")
    owned(other, OTHER_USER)
    neighbour = folder / "neighbour.bin"  # another job's file, owned by another slot's uid
    neighbour.write_text("z")
    owned(neighbour, slot_uid(9))
    private = folder / "private"
    private.mkdir()
    owned(private, OTHER_USER)
    return {"secret": secret, "other": other, "neighbour": neighbour, "private": private}


def left_by_attempt_one(checkpoint: Path, host: dict, uid: int) -> None:
    """What a job running as ``uid`` left: its files, then links out of the folder."""
    checkpoint.mkdir(parents=True)
    owned(checkpoint, uid)
    nested = checkpoint / "epoch-3" / "shards"
    nested.mkdir(parents=True)
    for path in (checkpoint / "epoch-3", nested):
        owned(path, uid)
    for path in (checkpoint / "step.pt", nested / "0.pt"):
        path.write_bytes(b"weights")
        owned(path, uid)
    os.chmod(nested / "0.pt", 0o600)
    for name, target in (("to-secret", "secret"), ("to-private", "private"), ("to-other", "other")):
        os.symlink(host[target], checkpoint / name)
        os.lchown(checkpoint / name, uid, uid)
    os.link(host["secret"], checkpoint / "hard-secret")
    os.link(host["other"], nested / "hard-other")
    os.link(host["neighbour"], checkpoint / "hard-neighbour")


def test_the_next_attempt_gets_the_jobs_files_and_nothing_from_outside(tmp_path, host):
    base = tmp_path / "node"
    base.mkdir()
    checkpoint = base / "jobs" / "7" / "replica-0" / "checkpoint"
    left_by_attempt_one(checkpoint, host, slot_uid(3))

    checkpoint_prepare(checkpoint, base=base, uid=slot_uid(5))

    for path in (
        checkpoint,
        checkpoint / "epoch-3",
        checkpoint / "epoch-3" / "shards",
        checkpoint / "step.pt",
        checkpoint / "epoch-3" / "shards" / "0.pt",
    ):
        assert owner(path) == slot_uid(5), path
    assert stat.S_IMODE(os.lstat(checkpoint).st_mode) == 0o700
    for parent in (base, base / "jobs", base / "jobs" / "7", checkpoint.parent):
        assert stat.S_IMODE(os.lstat(parent).st_mode) == 0o711, parent
    # Outside, nothing changed hands: not through a link, not through a hard link.
    assert owner(host["secret"]) == 0
    assert owner(host["other"]) == OTHER_USER
    assert owner(host["neighbour"]) == slot_uid(9)
    assert owner(host["private"]) == OTHER_USER
    # The links themselves stay the earlier attempt's: the new uid may remove them.
    assert owner(checkpoint / "to-secret") == slot_uid(3)


def test_entries_of_root_or_of_a_person_inside_keep_their_owner(tmp_path):
    checkpoint = tmp_path / "checkpoint"
    checkpoint.mkdir()
    (checkpoint / "roots").write_text("r")
    (checkpoint / "persons").mkdir()
    owned(checkpoint / "persons", OTHER_USER)
    checkpoint_hand_over(checkpoint, slot_uid(5))
    assert owner(checkpoint / "roots") == 0
    assert owner(checkpoint / "persons") == OTHER_USER
    assert owner(checkpoint) == slot_uid(5)


def test_a_link_in_place_of_the_checkpoint_is_refused_and_its_target_untouched(tmp_path, host):
    base = tmp_path / "node"
    checkpoint = base / "jobs" / "7" / "replica-0" / "checkpoint"
    checkpoint.parent.mkdir(parents=True)
    os.symlink(host["private"], checkpoint)
    with pytest.raises(CheckpointRefused):
        checkpoint_prepare(checkpoint, base=base, uid=slot_uid(5))
    assert owner(host["private"]) == OTHER_USER
    with pytest.raises(CheckpointRefused):
        checkpoint_hand_over(checkpoint, None)


def test_a_file_in_place_of_the_checkpoint_is_refused(tmp_path):
    checkpoint = tmp_path / "checkpoint"
    checkpoint.write_text("not a folder")
    with pytest.raises(CheckpointRefused):
        checkpoint_prepare(checkpoint, base=tmp_path, uid=slot_uid(5))


def deep_tree(top: Path, levels: int, uid: int) -> Path:
    """A chain of ``levels`` folders, made a level at a time as a job would (no long paths)."""
    fd = os.open(top, os.O_RDONLY | os.O_DIRECTORY)
    for _level in range(levels):
        os.mkdir("d", dir_fd=fd)
        os.chown("d", uid, uid, dir_fd=fd)
        child = os.open("d", os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
        os.close(fd)
        fd = child
    os.close(os.open("leaf", os.O_WRONLY | os.O_CREAT, 0o600, dir_fd=fd))
    os.close(fd)
    return top


def test_a_tree_deeper_than_the_walk_is_handed_over_to_its_depth_and_removed_whole(tmp_path):
    checkpoint = tmp_path / "checkpoint"
    checkpoint.mkdir()
    deep_tree(checkpoint, MAX_DEPTH * 20, slot_uid(3))
    checkpoint_hand_over(checkpoint, slot_uid(5))
    assert owner(checkpoint / "d" / "d") == slot_uid(5)

    checkpoint_remove(checkpoint)
    assert not os.path.lexists(checkpoint)


def test_removal_follows_no_link(tmp_path, host):
    checkpoint = tmp_path / "checkpoint"
    left_by_attempt_one(checkpoint, host, slot_uid(3))
    (host["private"] / "keep.txt").write_text("keep")
    checkpoint_remove(checkpoint)
    assert not os.path.lexists(checkpoint)
    assert (host["private"] / "keep.txt").read_text() == "keep"
    assert host["secret"].read_text() == "x" and host["other"].read_text() == "y"


def test_a_link_in_place_of_the_checkpoint_is_removed_not_its_target(tmp_path, host):
    checkpoint = tmp_path / "checkpoint"
    os.symlink(host["private"], checkpoint)
    (host["private"] / "keep.txt").write_text("keep")
    checkpoint_remove(checkpoint)
    assert not os.path.lexists(checkpoint)
    assert (host["private"] / "keep.txt").read_text() == "keep"
    checkpoint_remove(checkpoint)  # gone already: fine


def test_marks_list_what_to_remove(tmp_path):
    marks = tmp_path / "checkpoints"
    assert checkpoint_marks(marks) == []
    checkpoint_mark(marks, job_id=12, replica_index=1)
    checkpoint_mark(marks, job_id=3, replica_index=0)
    checkpoint_mark(marks, job_id=3, replica_index=0)
    (marks / "not-a-mark").touch()
    assert checkpoint_marks(marks) == [(3, 0), (12, 1)]
    checkpoint_unmark(marks, job_id=3, replica_index=0)
    assert checkpoint_marks(marks) == [(12, 1)]
