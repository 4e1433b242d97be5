"""`manage.py run_agent`: the agent `make run` starts for the local demo nodes."""

import pytest
from django.core.management import CommandError, call_command

from jobs.models import Job
from tests.agent_support import cpu_job, make_node, place, wait_for_state


@pytest.mark.integration
def test_run_agent_runs_the_jobs_of_its_nodes(agent_env):
    node = make_node()
    agent_env([], beat=True)  # the central worker with beat, as in the Procfile
    agent = agent_env([node], command=True)
    job = wait_for_state(place(cpu_job("echo via run_agent"), [node]), Job.FINAL_STATES, agent)
    assert job.state == Job.State.SUCCEEDED, job.state_reason
    assert f"Serving 1 node(s): node.{node.name}" in agent.logs()


def test_run_agent_refuses_an_unknown_node(db):
    make_node(name="gpu-a")
    with pytest.raises(CommandError, match="No local node named nope"):
        call_command("run_agent", nodes=["gpu-a", "nope"])


def test_run_agent_refuses_when_there_is_nothing_to_serve(db):
    make_node(name="slurm-a", executor="slurm")
    with pytest.raises(CommandError, match="no local node"):
        call_command("run_agent")
