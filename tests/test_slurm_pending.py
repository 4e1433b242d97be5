"""Slurm's pending reasons in the reader's words (jobs/execution/slurm/pending.py)."""

from __future__ import annotations

import pytest
from django.utils import translation

from jobs.execution.slurm.pending import pending_reason


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
