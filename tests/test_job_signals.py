"""A job whose own process ends by TERM or KILL (its own ``kill``, the kernel's OOM killer)
ends failed, naming the signal, on both executors (``executor_sites.py``).

On Slurm, a replica that exits by TERM or KILL may have been ended by Slurm (its time
limit, a failed peer, a cancel), so its files wait for Slurm's word; the job must still
end once Slurm has it ended, never stay running on a replica that has exited.
"""

from __future__ import annotations

import pytest

from jobs.models import Job
from tests.agent_support import attempts_of

pytestmark = pytest.mark.integration


@pytest.mark.parametrize(("signal_name", "code"), [("KILL", 137), ("TERM", 143)])
def test_a_job_that_signals_itself_ends_failed_naming_the_signal(site, signal_name, code):
    # A child of the script, so that the script's own exit carries the signal's status
    # (the script itself may be a namespace's first process, which ignores both).
    job = site.run(f"echo up\nsh -c 'kill -{signal_name} $$'\nexit $?")
    assert job.state == Job.State.FAILED, job.state_reason
    (attempt,) = attempts_of(job)
    assert str(code) in attempt.reason or f"SIG{signal_name}" in attempt.reason, attempt.reason
    assert attempt.exit_code == code
