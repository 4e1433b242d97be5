"""The Slurm backend's pieces that need no cluster: states, names, scripts, parsing, gating."""

import contextlib
import json
import os
import signal
import subprocess
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest

from jobs.execution.slurm import cli, inventory, outcome, scripts, submit
from jobs.execution.slurm.tasks import slurm_sync_nodes, slurm_track
from jobs.models import ReplicaAttempt
from tests.factories import GpuModelFactory, JobFactory, NodeFactory

State = ReplicaAttempt.State
T0 = datetime(2026, 1, 1, tzinfo=UTC)


def slurm_job(state: str, wait_status: int | None = 0) -> cli.SlurmJob:
    return cli.SlurmJob("42", "trainyard-j1-r0-a1", state, "", wait_status, T0, T0, "gpu01")


def record(tmp_path: Path, *, stop=None, exit=None, peer_failed=None) -> outcome.ReplicaRecord:
    log = tmp_path / "output.log"
    log.write_text("line one\nline two\n")
    return outcome.ReplicaRecord(stop=stop, exit=exit, log=log, peer_failed=peer_failed)


@pytest.fixture
def attempt(db):
    job = JobFactory(max_runtime_minutes=5, memory_mib=2048)
    node = NodeFactory(executor="slurm")
    replica = job.replica_set.create(index=0, node=node)
    return ReplicaAttempt.objects.create(replica=replica, number=1, node=node)


@pytest.mark.parametrize(
    ("slurm_state", "wait_status", "state", "exit_code", "platform_fault", "words"),
    [
        ("COMPLETED", 0, State.SUCCEEDED, 0, False, "Exited with code 0."),
        ("FAILED", 3 << 8, State.FAILED, 3, False, "Exited with exit code 3."),
        ("FAILED", 9, State.FAILED, 137, False, "exit code 137 (SIGKILL)"),
        ("TIMEOUT", 15, State.TIMED_OUT, 143, False, "Max run time of 5 minutes exceeded."),
        ("DEADLINE", 0, State.TIMED_OUT, 0, False, "Max run time of 5 minutes exceeded."),
        ("CANCELLED", 15, State.STOPPED, 143, False, "Cancelled in Slurm."),
        ("NODE_FAIL", None, State.LOST, None, True, "Slurm lost the job (NODE_FAIL)"),
        ("BOOT_FAIL", None, State.LOST, None, True, "Slurm lost the job (BOOT_FAIL)"),
        ("PREEMPTED", 15, State.LOST, 143, True, "Slurm lost the job (PREEMPTED)"),
        ("OUT_OF_MEMORY", 9, State.FAILED, 137, False, "ran out of its 2048 MiB of memory"),
        (outcome.VANISHED, None, State.LOST, None, True, "Slurm no longer knows the job"),
    ],
)
def test_slurm_end_states_map_to_attempt_states(
    attempt, tmp_path, slurm_state, wait_status, state, exit_code, platform_fault, words
):
    result = outcome.outcome(slurm_job(slurm_state, wait_status), record(tmp_path), attempt=attempt)
    assert (result.state, result.exit_code, result.platform_fault) == (
        state,
        exit_code,
        platform_fault,
    )
    assert result.reason.english.startswith(f"Slurm job 42 ended {slurm_state}.")
    assert words in result.reason.english


def test_failure_reason_carries_the_exit_code_and_the_logs_last_lines(attempt, tmp_path):
    result = outcome.outcome(slurm_job("FAILED", 2 << 8), record(tmp_path), attempt=attempt)
    tail = "Exited with exit code 2. Last lines of the log:\nline one\nline two"
    assert tail in result.reason.english


def test_a_stop_trainyard_asked_for_decides_whatever_slurm_saw(attempt, tmp_path):
    stop = {"kind": State.TIMED_OUT, "reason": "Max run time of 5 minutes exceeded."}
    result = outcome.outcome(
        slurm_job("FAILED", 15 << 8), record(tmp_path, stop=stop), attempt=attempt
    )
    assert (result.state, result.reason.english) == (State.TIMED_OUT, stop["reason"])


def test_replicas_own_exit_code_wins_over_the_slurm_jobs(attempt, tmp_path):
    exit = {"exit_code": 0, "summary": "exit code 0", "ended_at": T0.isoformat()}
    result = outcome.outcome(
        slurm_job("FAILED", 1 << 8), record(tmp_path, exit=exit), attempt=attempt
    )
    assert (result.state, result.exit_code) == (State.FAILED, 0)
    done = outcome.outcome(slurm_job("COMPLETED"), record(tmp_path, exit=exit), attempt=attempt)
    assert done.state == State.SUCCEEDED


def test_replica_killed_because_a_peer_failed_ends_stopped(attempt, tmp_path):
    result = outcome.outcome(
        slurm_job("FAILED", 1 << 8), record(tmp_path, peer_failed=1), attempt=attempt
    )
    assert result.state == State.STOPPED
    assert "after replica 1 failed" in result.reason.english


def test_replica_ends_stopped_when_its_failed_peer_was_reported_before_the_slurm_job_ended(
    db, settings, tmp_path
):
    """The race CI saw: replica 1's exit.json was reported first (a report task), and squeue
    showed the Slurm job ended before the stop for replica 0 was written: replica 0 was killed
    by Slurm because its peer failed, so it ends stopped, not failed."""
    from django.utils import timezone

    from jobs.execution.replica.folder import AttemptFolder
    from jobs.execution.slurm import replica_reports

    settings.TRAINYARD_NODE_ROOT = tmp_path
    job = JobFactory(task_mode="distributed", replicas=2, attempt=1, state="running")
    attempts = []
    for index in range(2):
        node = NodeFactory(executor="slurm")
        replica = job.replica_set.create(index=index, node=node)
        attempts.append(
            ReplicaAttempt.objects.create(
                replica=replica,
                number=1,
                node=node,
                external_id="42",
                state=State.RUNNING,
                started_at=T0,
            )
        )
    waiting, failing = attempts
    exit = {"exit_code": 1, "summary": "exit code 1", "ended_at": T0.isoformat()}
    AttemptFolder(failing.node.name, failing.pk).path.mkdir(parents=True)
    AttemptFolder(failing.node.name, failing.pk).write("exit", exit)
    replica_reports.report_from_files("42", [failing.pk])
    assert ReplicaAttempt.objects.get(pk=failing.pk).state == State.FAILED

    replica_reports.report_ends([waiting], slurm_job("FAILED", 1 << 8), timezone.now())
    waiting.refresh_from_db()
    assert waiting.state == State.STOPPED, waiting.reason
    assert "after replica 1 failed" in waiting.reason


@pytest.mark.parametrize(
    ("state", "pending", "active", "ended"),
    [
        ("PENDING", True, False, False),
        ("CONFIGURING", True, False, False),
        ("RUNNING", False, True, False),
        ("COMPLETING", False, True, False),
        ("SUSPENDED", False, True, False),
        ("COMPLETED", False, False, True),
        ("OUT_OF_MEMORY", False, False, True),
    ],
)
def test_slurm_states_are_pending_active_or_ended(state, pending, active, ended):
    job = slurm_job(state)
    assert (outcome.is_pending(job), outcome.is_active(job), outcome.has_ended(job)) == (
        pending,
        active,
        ended,
    )


def test_job_names_identify_job_replicas_and_attempt_of_this_installation(settings):
    settings.TRAINYARD_SLURM_JOB_PREFIX = "ty-prod"
    assert submit.job_name(12, 3, 1) == "ty-prod-j12-r0-a3"
    assert submit.job_name(12, 1, 4) == "ty-prod-j12-r0-3-a1"
    assert submit.parse_job_name("ty-prod-j12-r0-3-a1") == (12, 1)
    assert submit.parse_job_name("ty-staging-j12-r0-a1") is None
    assert submit.parse_job_name("someone-elses-job") is None


def test_squeue_columns_parse_into_jobs_and_a_name_may_hold_the_separator():
    failed = cli.parse_job_line(
        "7|FAILED|NonZeroExitCode|768|2023-11-14T22:13:20|2023-11-14T22:14:20|gpu01|ty-j7-r0-a1"
    )
    assert (failed.job_id, failed.state, failed.exit_code, failed.nodes) == (
        "7",
        "FAILED",
        3,
        "gpu01",
    )
    assert (failed.end_time - failed.start_time).total_seconds() == 60
    assert failed.name == "ty-j7-r0-a1"
    killed = cli.parse_job_line("8|CANCELLED|None|9|2023-11-14T22:13:20|N/A||a|b c")
    assert (killed.exit_code, killed.reason, killed.end_time, killed.name) == (
        137,
        "",
        None,
        "a|b c",
    )
    pending = cli.parse_job_line("9|PENDING|Resources|0|N/A|N/A||ty-j9-r0-a1")
    assert (pending.state, pending.reason, pending.start_time) == ("PENDING", "Resources", None)
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
    assert submit.gres(job, node) == "gpu:2"  # no mapping yet: the pinned node decides the type
    node.gpu_model.slurmgputype_set.create(slurm_type="v100")
    assert submit.gres(job, node) == "gpu:v100:2"
    assert submit.gres(JobFactory(resource_kind="cpu", gpu_model=None, gpu_count=0), node) == ""


def plans(tmp_path: Path, count: int) -> list[scripts.ReplicaPlan]:
    shared = {"TRAINYARD_JOB_ID": "5", "WORLD_SIZE": str(count), "PATH": "/usr/bin:/bin"}
    return [
        scripts.ReplicaPlan(
            index=i,
            attempt_number=1,
            attempt_folder=tmp_path / f"a{i}",
            node_name=f"gpu0{i + 1}",
            env={**shared, "RANK": str(i), "ODD_VALUE": 'it\'s $HOME; "quoted"'},
            phases=["training"],
        )
        for i in range(count)
    ]


def write_phase(plan: scripts.ReplicaPlan, name: str, argv: list[str]) -> None:
    """What the keeper writes for a phase: its command line, and bwrap's options (none here)."""
    (plan.attempt_folder / f"argv-{name}").write_bytes(b"".join(a.encode() + b"\0" for a in argv))
    (plan.attempt_folder / f"bwrap-{name}.args").write_bytes(b"")


REQUEST = scripts.Request(
    cpu_milli=2500, memory_mib=4096, gres="gpu:v100:2", runtime_minutes=30, warning_seconds=20
)


def test_sbatch_line_pins_nodes_and_asks_for_the_replicas_resources(tmp_path):
    argv = scripts.sbatch_argv(
        plans(tmp_path, 2), name="ty-j5-r0-1-a1", request=REQUEST, partition="p", account="acct"
    )
    for expected in [
        "--job-name=ty-j5-r0-1-a1",
        "--nodes=2",
        "--nodelist=gpu01,gpu02",
        "--ntasks-per-node=1",
        "--cpus-per-task=3",
        "--mem=4096M",
        "--gres=gpu:v100:2",
        "--time=30",
        "--signal=B:USR1@20",
        "--partition=p",
        "--account=acct",
        "--export=ALL",
        f"--output={tmp_path / 'a0' / 'output.log'}",
    ]:
        assert expected in argv


def test_variables_shared_by_every_replica_travel_with_sbatch_the_others_in_each_script(tmp_path):
    both = plans(tmp_path, 2)
    shared = scripts.shared_environment(both)
    assert shared == {"TRAINYARD_JOB_ID": "5", "WORLD_SIZE": "2", "PATH": "/usr/bin:/bin"} | {
        "ODD_VALUE": 'it\'s $HOME; "quoted"'
    }
    script = scripts.replica_script(both[1], shared=shared, request=REQUEST, deadline_seconds=60)
    assert "export RANK=1" in script
    assert "export TRAINYARD_JOB_ID" not in script
    assert 'env -i CUDA_VISIBLE_DEVICES="${CUDA_VISIBLE_DEVICES-}"' in script
    assert "TRAINYARD_DEADLINE=$(( $(date +%s) + 60 ))" in script


def test_generated_scripts_are_valid_bash(tmp_path):
    for count in (1, 2):
        replicas = plans(tmp_path, count)
        shared = scripts.shared_environment(replicas)
        for text in [
            scripts.batch_script(replicas, request=REQUEST, python="/usr/bin/python3"),
            *(
                scripts.replica_script(p, shared=shared, request=REQUEST, deadline_seconds=None)
                for p in replicas
            ),
        ]:
            check = subprocess.run(["bash", "-n"], input=text, capture_output=True, text=True)
            assert check.returncode == 0, (check.stderr, text)
    multi = scripts.batch_script(plans(tmp_path, 2), request=REQUEST, python="/usr/bin/python3")
    assert "srun --kill-on-bad-exit=1 --nodes=2" in multi and "gpu02)" in multi
    # Slurm's USR1 warning reaches the batch shell only: srun must not forward it.
    assert "exec srun" not in multi and "' USR1" in multi


def test_replica_script_runs_the_phase_with_exactly_its_environment(tmp_path):
    """Run a generated replica script (no Slurm needed for this part) and read what it wrote."""
    [plan] = plans(tmp_path, 1)
    plan.attempt_folder.mkdir()
    (tmp_path / "cmd.sh").write_text('env > "$OUT"; exit 3\n')
    write_phase(plan, "training", ["bash", "--noprofile", "--norc", str(tmp_path / "cmd.sh")])
    plan = scripts.ReplicaPlan(
        **{**plan.__dict__, "env": {**plan.env, "OUT": str(tmp_path / "env")}}
    )
    text = scripts.replica_script(plan, shared={}, request=REQUEST, deadline_seconds=None)
    run = subprocess.run(
        ["bash", "-c", text],
        env={"LEAK": "secret", "SLURMD_NODENAME": "gpu01", "SLURM_JOB_ID": "9"},
    )
    assert run.returncode == 3
    seen = dict(line.split("=", 1) for line in (tmp_path / "env").read_text().splitlines())
    assert (
        "LEAK" not in seen and seen["RANK"] == "0" and seen["ODD_VALUE"] == 'it\'s $HOME; "quoted"'
    )
    exit = json.loads((plan.attempt_folder / "exit.json").read_text())
    assert (exit["exit_code"], exit["summary"]) == (3, "exit code 3")
    assert json.loads((plan.attempt_folder / "phase-training.json").read_text())["node"] == "gpu01"
    assert "[trainyard] replica finished: exit code 3" in plan.log_path.read_text()


@pytest.fixture
def run_replica_script(tmp_path):
    """Start a generated replica script (one phase per command) in a session of its own;
    whatever of it is left at the end is killed, so a failing test leaves nothing running."""
    started: list[subprocess.Popen] = []

    def run(commands: list[str]):
        [plan] = plans(tmp_path, 1)
        plan.attempt_folder.mkdir()
        phases = []
        for number, command in enumerate(commands):
            (tmp_path / f"cmd{number}.sh").write_text(command)
            write_phase(plan, f"phase{number}", ["bash", str(tmp_path / f"cmd{number}.sh")])
            phases.append(f"phase{number}")
        plan = scripts.ReplicaPlan(**{**plan.__dict__, "phases": phases})
        text = scripts.replica_script(plan, shared={}, request=REQUEST, deadline_seconds=None)
        env = {"SLURMD_NODENAME": "gpu01", "SLURM_JOB_ID": "9", "PATH": "/usr/bin:/bin"}
        started.append(subprocess.Popen(["bash", "-c", text], env=env, start_new_session=True))
        return plan, started[-1]

    yield run
    for script in started:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(script.pid, signal.SIGKILL)
        script.wait()


def alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] not in "ZX"
    except FileNotFoundError:
        return False


def with_pids(path: Path, command: str) -> str:
    """``command`` in the background of a shell that writes its own pid and the command's."""
    return f"{command} & echo $$ $! > {path}.partial; mv {path}.partial {path}; wait\n"


def pids_written(path: Path) -> list[int]:
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        if path.exists() and len(text := path.read_text().split()) == 2:
            return [int(pid) for pid in text]
        time.sleep(0.02)
    raise AssertionError(f"the phase did not write {path}")


def test_a_term_reaches_the_whole_phase_and_the_script_outlives_it(tmp_path, run_replica_script):
    """Slurm finds a phase's processes through this script (proctrack/linuxproc follows the
    process tree): if the script died of TERM first, a process that missed the signal would
    be orphaned out of Slurm's reach and run on, holding its card and ports."""
    pids = tmp_path / "pids"
    # The command's shell waits for a child, as a line running python does.
    plan, script = run_replica_script([with_pids(pids, "sleep 60")])
    shell, child = pids_written(pids)
    os.kill(script.pid, signal.SIGTERM)  # the script alone: the phase must get it from there
    assert script.wait(timeout=10) == 143
    assert not alive(shell) and not alive(child)
    assert not (plan.attempt_folder / "exit.json").exists()  # Slurm's state decides
    assert "[trainyard] replica stopped: Slurm sent TERM" in plan.log_path.read_text()


def test_no_phase_starts_after_a_term(tmp_path, run_replica_script):
    pids = tmp_path / "pids"
    second = tmp_path / "second-phase-ran"
    # The first phase takes the TERM and exits 0: the script still must not go on.
    plan, script = run_replica_script(
        [with_pids(pids, "trap 'exit 0' TERM; sleep 60"), f"touch {second}\n"]
    )
    pids_written(pids)
    os.kill(script.pid, signal.SIGTERM)
    assert script.wait(timeout=10) == 143
    assert not second.exists()


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
