"""The Slurm backend's pieces that need no cluster: names, parsing, GRES, tool errors, gating."""

import pytest

from jobs.execution.slurm import cli, eligible, inventory, submit
from jobs.execution.slurm.hostlist import expand
from jobs.execution.slurm.tasks import slurm_sync_nodes, slurm_track
from tests.factories import GpuModelFactory, JobFactory, NodeFactory, ReplicaAttemptFactory


def test_job_names_identify_job_replicas_and_attempt_of_this_installation(settings):
    settings.TRAINYARD_SLURM_JOB_PREFIX = "ty-prod"
    assert submit.job_name(12, 3, 1) == "ty-prod-j12-r0-a3"
    assert submit.job_name(12, 1, 4) == "ty-prod-j12-r0-3-a1"
    assert submit.parse_job_name("ty-prod-j12-r0-3-a1") == (12, 1)
    assert submit.parse_job_name("ty-staging-j12-r0-a1") is None
    assert submit.parse_job_name("someone-elses-job") is None


def test_squeue_columns_parse_into_jobs_and_a_name_may_hold_the_separator():
    failed = cli.parse_job_line(
        "7|FAILED|NonZeroExitCode|768|2023-11-14T22:13:20|2023-11-14T22:14:20|gpu01|0|ty|"
        "ty-j7-r0-a1"
    )
    assert (failed.job_id, failed.state, failed.exit_code, failed.nodes) == (
        "7",
        "FAILED",
        3,
        "gpu01",
    )
    assert (failed.end_time - failed.start_time).total_seconds() == 60
    assert failed.name == "ty-j7-r0-a1"
    killed = cli.parse_job_line("8|CANCELLED|None|9|2023-11-14T22:13:20|N/A||0|ty|a|b c")
    assert (killed.exit_code, killed.reason, killed.end_time, killed.name) == (
        137,
        "",
        None,
        "a|b c",
    )
    pending = cli.parse_job_line("9|PENDING|Resources|0|N/A|N/A||4294901|trainyard|ty-j9-r0-a1")
    assert (pending.state, pending.reason, pending.start_time) == ("PENDING", "Resources", None)
    assert (pending.priority, pending.partition) == (4294901, "trainyard")
    assert cli.parse_job_line("slurm_load_jobs error: something") is None
    assert cli.parse_job_line("") is None


def test_sinfo_json_gives_state_flags_gres_and_partitions():
    raw = {
        "name": "gpu02",
        "state": "idle",
        "state_flags": ["DRAIN"],
        "reason": "new disks",
        "cpus": 48,
        "real_memory": 229376,
        "temporary_disk": 0,
        "gres": "gpu:v100:4(S:0-1)",
        "partitions": ["trainyard"],
        "address": "10.0.0.2",
    }
    node = cli._node(raw)
    assert (node.state, node.flags, node.cpus, node.address) == ("idle", ("DRAIN",), 48, "10.0.0.2")
    assert inventory.slurm_state(node) == ("draining", "Slurm: IDLE DRAIN (new disks)")
    assert (
        inventory.slurm_state(cli._node({**raw, "state": "down", "state_flags": []}))[0] == "down"
    )
    assert inventory.slurm_state(cli._node({**raw, "state": "mixed", "state_flags": []})) == (
        "ready",
        "",
    )


@pytest.mark.parametrize(
    ("gres", "count", "problem"),
    [
        ("gpu:v100:4(S:0-1)", 4, ""),
        ("gpu:v100:2,gpu:v100:2", 4, ""),
        ("", 0, ""),
        ("(null)", 0, ""),
        ("gpu:4", 0, "without a type"),
        ("gpu:v100:2,gpu:a100:2", 0, "several types"),
        ("gpu:h100:8", 0, "maps to no GPU model"),
    ],
)
def test_gres_becomes_a_model_and_a_card_count(db, gres, count, problem):
    GpuModelFactory(name="V100")
    model, cards, why = inventory._gpus(gres)
    assert cards == count
    assert (model is not None) == bool(count)
    assert problem in why if problem else why == ""


def test_gres_request_names_the_slurm_type_of_the_nodes_model(db):
    node = NodeFactory(executor="slurm")
    job = JobFactory(gpu_count=2)
    asked = eligible.asked_model_id(ReplicaAttemptFactory(replica__job=job, replica__node=node))
    assert asked == node.gpu_model_id  # pinned: the node's model
    assert submit.gres(job, asked) == "gpu:2"  # no mapping yet: the pinned node decides the type
    node.gpu_model.slurmgputype_set.create(slurm_type="v100")
    assert submit.gres(job, asked) == "gpu:v100:2"
    assert submit.gres(JobFactory(resource_kind="cpu", gpu_model=None, gpu_count=0), None) == ""


def test_tool_errors_tell_an_unreachable_controller_from_a_refusal(tmp_path, settings):
    settings.TRAINYARD_SLURM_BIN_DIR = str(tmp_path)
    tool = tmp_path / "squeue"
    tool.write_text(
        "#!/bin/sh\necho 'squeue: error: Unable to contact slurm controller' >&2\nexit 1\n"
    )
    tool.chmod(0o755)
    with pytest.raises(cli.SlurmUnavailable):
        cli.job_ids_named("x")
    tool.write_text("#!/bin/sh\necho 'squeue: error: Invalid job id specified' >&2\nexit 1\n")
    with pytest.raises(cli.SlurmRefused):
        cli.job_ids_named("x")
    tool.write_text(
        "#!/bin/sh\necho 'slurm_load_jobs error: Unable to contact slurm controller' >&2\nexit 1\n"
    )
    with pytest.raises(cli.SlurmUnavailable):
        cli.jobs(name_prefix="ty")
    sinfo = tmp_path / "sinfo"  # 22.05's --json: exit 0, errors in the body, no nodes
    sinfo.write_text('#!/bin/sh\necho \'{"errors": [{"error": "x"}], "nodes": []}\'\n')
    sinfo.chmod(0o755)
    with pytest.raises(cli.SlurmUnavailable):
        cli.nodes()
    settings.TRAINYARD_SLURM_BIN_DIR = str(tmp_path / "missing")
    with pytest.raises(cli.SlurmUnavailable):
        cli.jobs(name_prefix="ty")


def test_periodic_tasks_do_nothing_unless_slurm_is_configured(db, settings, tmp_path):
    settings.TRAINYARD_SLURM_BIN_DIR = str(tmp_path)  # no tools here: any call would raise
    settings.TRAINYARD_SLURM_ENABLED = False
    slurm_sync_nodes()
    slurm_track()
    settings.TRAINYARD_SLURM_ENABLED = True
    with pytest.raises(cli.SlurmUnavailable):
        slurm_sync_nodes()


@pytest.mark.parametrize(
    ("hostlist", "names"),
    [
        ("gpu02", ["gpu02"]),
        ("gpu[01-03,07],cpu1", ["gpu01", "gpu02", "gpu03", "gpu07", "cpu1"]),
        ("r[1-2]-n[8-9]", ["r1-n8", "r1-n9", "r2-n8", "r2-n9"]),
        ("", []),
        ("gpu[x]", ["gpu[x]"]),  # not a range: kept as written, matches no node
    ],
)
def test_slurms_node_lists_expand_as_scontrol_show_hostnames_does(hostlist, names):
    assert expand(hostlist) == names
