"""Slurm's pending reasons in the reader's words (jobs/execution/slurm/pending.py)."""

from __future__ import annotations

import pytest
from django.utils import translation

from jobs.execution.slurm.cli import SlurmJob
from jobs.execution.slurm.pending import pending_positions, pending_reason


@pytest.mark.parametrize(
    ("slurm", "english"),
    [
        ("Resources", "the resources it needs are in use by other Slurm jobs"),
        ("Priority", "Slurm jobs of higher priority go first"),
        ("JobHeldUser", "held in Slurm by a user (`scontrol release 42` lets it go)"),
        ("JobHeldAdmin", "held in Slurm by an administrator"),
        (
            "ReqNodeNotAvail, UnavailableNodes:gpu-[1-2]",
            "a node it needs is down, drained or reserved (gpu-[1-2])",
        ),
        ("QOSMaxGRESPerUser", "a Slurm limit holds it (`QOSMaxGRESPerUser`)"),
        ("", "Slurm has not considered it yet"),
        ("FrontEndDown", "Slurm says `FrontEndDown`"),
    ],
)
def test_slurms_reason_codes_read_as_sentences(slurm, english):
    assert pending_reason(slurm, slurm_id="42").english == english


def test_in_chinese():
    with translation.override("zh-hans"):
        assert pending_reason("JobHeldAdmin", slurm_id="7").text() == "被管理员在 Slurm 中挂起"


def slurm_job(job_id: str, state: str, priority: int, partition: str = "trainyard") -> SlurmJob:
    return SlurmJob(job_id, "x", state, "", None, None, None, "", priority, partition)


def test_a_pending_jobs_position_is_slurms_order_in_its_partition():
    queue = [
        slurm_job("10", "RUNNING", 900),
        slurm_job("11", "PENDING", 500),
        slurm_job("12", "PENDING", 700),
        slurm_job("13", "PENDING", 500),
        slurm_job("14", "PENDING", 999, partition="other"),
    ]
    # Higher priority first; equal priorities by job id (submission order).
    assert pending_positions(queue, partition="trainyard") == {"12": 1, "11": 2, "13": 3}
    assert pending_positions(queue, partition="")["14"] == 1
