"""The agent samples what a running job uses, from the kernel's counts: real jobs on the
real agent (jobs/execution/agent/usage.py). NVML: tests/test_usage_metrics.py (a fake)."""

from __future__ import annotations

import pytest

from jobs.models import AttemptSample, Job
from jobs.usage_metrics import job_usage
from tests.agent_support import cpu_job, make_node, place, wait_for_state
from tests.support.waiting import wait_until

pytestmark = pytest.mark.integration

# Three seconds of one core's time, then 500 MiB touched page by page, then asleep.
WORKLOAD = r"""python3 - <<'EOF'
import time
while time.process_time() < 3.0:
    pass
block = bytearray(500 * 1024 * 1024)
for i in range(0, len(block), 4096):
    block[i] = 1
open("/trainyard/output/ready", "w").write(str(time.process_time()))
time.sleep(600)
EOF"""


def test_a_jobs_cpu_time_memory_and_sleep_are_seen_as_the_kernel_counts_them(agent_env):
    agent = agent_env([make_node()], env={"TRAINYARD_USAGE_SAMPLE_SECONDS": "1"})
    job = cpu_job(WORKLOAD, memory_mib=2048)
    job = wait_for_state(place(job, agent.nodes[:1]), Job.State.RUNNING, agent)

    def settled():
        samples = list(AttemptSample.objects.filter(attempt__replica__job=job).order_by("at"))
        asleep = [s for s in samples if s.memory_mib >= 500]
        return samples if len(asleep) >= 4 else None

    samples = wait_until(settled, what="four samples of the job asleep", timeout=90)
    last = samples[-1]
    # Its own three seconds and a little more (the interpreter's start, the page touching).
    assert 3.0 <= last.cpu_seconds <= 4.5, last.cpu_seconds
    # 500 MiB held, and not much besides.
    assert 500 <= last.memory_mib <= 700, last.memory_mib

    [attempt] = job_usage(job)
    rates = [p["cpu_percent"] for p in attempt["points"] if p["cpu_percent"] is not None]
    # Flat out while burning (a loaded machine shares its cores), then asleep.
    assert max(rates) >= 40, rates
    assert rates[-1] <= 3, rates
    assert attempt["points"][-1]["gpus"] == []  # a CPU job: no card, no NVML asked
