"""Why a replica failed, in words a person can act on.

The exit code and the log's last lines say what the program saw; a cause it
cannot report itself comes first: the kernel killed it for going over its
memory limit (the cgroup counts that).
"""

from __future__ import annotations

from django.utils.translation import gettext as _

from jobs.execution.files import log_tail
from jobs.models import ReplicaAttempt
from resources.ratios import mib_to_gib

from . import limits
from .state import AttemptFolder

FAILURE_TAIL_LINES = 20


def failure_reason(folder: AttemptFolder, attempt: ReplicaAttempt, exit_info: dict) -> str:
    job = attempt.replica.job
    causes = []
    if limits.oom_kills((folder.read("spec") or {}).get("cgroup")):
        causes.append(
            _("Out of memory: the replica went over its memory limit of %(limit)s GiB.")
            % {"limit": mib_to_gib(job.memory_mib)}
        )
    causes.append(
        _("Exited with %(summary)s. Last lines of the log:\n%(tail)s")
        % {
            "summary": exit_info["summary"],
            "tail": log_tail(folder.log, lines=FAILURE_TAIL_LINES),
        }
    )
    return " ".join(causes)
