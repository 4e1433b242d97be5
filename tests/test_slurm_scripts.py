"""The sbatch line and the replica scripts Trainyard writes for Slurm: no cluster needed."""

import contextlib
import json
import os
import re
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from jobs.execution.replica import keeper
from jobs.execution.slurm import scripts


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


def test_a_job_slurm_places_names_no_node_and_carries_trainyards_order(tmp_path):
    [plan] = plans(tmp_path, 1)
    unplaced = scripts.ReplicaPlan(**{**plan.__dict__, "node_name": ""})
    request = scripts.Request(**{**REQUEST.__dict__, "nice": 1200})

    argv = scripts.sbatch_argv(
        [unplaced],
        name="ty-j5-r0-a1",
        request=request,
        partition="p",
        account="",
        exclude=["gpu03", "gpu07"],
    )
    pinned = scripts.sbatch_argv(
        plans(tmp_path, 1),
        name="ty-j6-r0-a1",
        request=REQUEST,
        partition="p",
        account="",
        exclude=["gpu03"],
    )

    assert not [arg for arg in argv if arg.startswith("--nodelist")]
    assert "--nice=1200" in argv and "--gres=gpu:v100:2" in argv
    assert "--exclude=gpu03,gpu07" in argv  # closed by a Trainyard admin
    assert "--nodelist=gpu01" in pinned and not [a for a in pinned if a.startswith("--exclude")]


def test_a_gang_slurm_places_goes_by_rank_and_finds_replica_zeros_node(tmp_path):
    gang = [scripts.ReplicaPlan(**{**p.__dict__, "node_name": ""}) for p in plans(tmp_path, 2)]
    batch = scripts.batch_script(gang, request=REQUEST, python="/usr/bin/python3")
    assert 'case "$SLURM_PROCID" in 0) keep' in batch and "gpu01)" not in batch
    assert 'export TRAINYARD_MASTER_NODE="$SLURMD_NODENAME"' in batch
    addresses = {"gpu01": "10.0.0.1", "gpu02": "10.0.0.2"}

    def master(plan: scripts.ReplicaPlan, *, on: str, first: str) -> str:
        lines = scripts.master_address(plan, addresses)
        script = "\n".join(['finish() { exit "$1"; }', *lines, 'echo "MASTER_ADDR=$MASTER_ADDR"'])
        env = {"PATH": "/usr/bin:/bin", "SLURMD_NODENAME": on, "TRAINYARD_MASTER_NODE": first}
        done = subprocess.run(["bash", "-c", script], env=env, capture_output=True, text=True)
        return done.stdout.strip()

    assert master(gang[1], on="gpu01", first="gpu02") == "MASTER_ADDR=10.0.0.2"
    assert master(gang[0], on="gpu02", first="gpu02") == "MASTER_ADDR=10.0.0.2"
    # Replica 0 elsewhere than the first node, or a node Trainyard does not know: no start.
    assert "not on the first node of the allocation" in master(gang[0], on="gpu01", first="gpu02")
    assert "no Slurm node Trainyard knows" in master(gang[1], on="gpu01", first="gpu09")
    assert "MASTER_ADDR" not in master(gang[1], on="gpu01", first="gpu01;id")


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


def test_the_keeper_runs_without_django_or_site_packages():
    """What a replica's keeper imports on its node, with the settings its plan carries, as
    its interpreter starts it (``keeper_argv``: no ``site``): no Django, nothing installed
    (a third of its own start, on every replica), the image modules only for an image, and
    none of the modules only the local runner needs (``ctypes``, ``traceback``, ``socket``:
    a fifth of the keeper's imports), no ``dataclasses`` (which imports ``inspect``: a
    sixth of a keeper's CPU, ``bench/keeper_start.py``), and no ``shutil`` (with ``bz2``
    and ``lzma``, for ``which`` alone: 4 ms of every keeper's start)."""
    probe = (
        "import sys; sys.path[:1] = [sys.argv[1]]\n"
        "from jobs.execution.node_settings import settings\n"
        "settings.configure({'TRAINYARD_SANDBOX': True})\n"
        "from jobs.execution import node_name\n"
        "from jobs.execution.replica import checkpoint, keeper, network, runner\n"
        "from jobs.execution.replica import sandbox, slots\n"
        "assert settings.TRAINYARD_SANDBOX is True\n"
        "from jobs.execution.replica.image_error import ImageError\n"
        "unwanted = ('django', 'site', 'hashlib', 'ctypes', 'traceback', 'socket',\n"
        "            'dataclasses', 'inspect', 'shutil', 'bz2', 'lzma')\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in unwanted))\n"
        "from jobs.execution.replica import image_cache\n"
        "assert image_cache.ImageError is ImageError\n"
    )
    root = str(Path(keeper.__file__).resolve().parents[3])
    python, *flags, script, folder = keeper.keeper_argv(sys.executable, Path("/attempt"))
    assert (python, script, folder) == (sys.executable, keeper.__file__, "/attempt")
    done = subprocess.run(
        [python, *flags, "-c", probe, root], capture_output=True, text=True, check=True
    )
    assert done.stdout.strip() == "[]", done.stdout


def test_the_readmes_sudo_rule_allows_the_keeper_as_slurm_starts_it():
    """sudo matches the whole command line: the rule the README gives sites must name the
    keeper's flags as ``keeper_argv`` passes them, or every replica is refused."""
    readme = (Path(keeper.__file__).resolve().parents[3] / "README.md").read_text()
    rule = re.search(r"NOPASSWD: ([^`]+)`", readme)
    assert rule is not None
    python, *flags, script, _folder = keeper.keeper_argv("/srv/trainyard/.venv/bin/python", Path())
    script = Path("/srv/trainyard") / Path(script).relative_to(keeper.PROJECT_ROOT)
    assert rule.group(1) == f"{shlex.join([python, *flags, str(script)])} *"
