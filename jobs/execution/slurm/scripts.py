"""The shell scripts a Slurm job runs, and the ``sbatch`` line that submits it.

One Slurm job per job attempt: a single replica runs its replica script as
the batch script; a distributed job asks for all its nodes at once (Slurm
starts them together: the gang) and ``srun`` starts one replica script per
node. On each node the replica's keeper (``replica/keeper.py``, root) gives
the replica its slot, network and sandbox, then runs the replica script,
which lives in its attempt folder (on the filesystem the platform shares with
the cluster) and, like the local agent's runner:

- appends everything to the attempt's log;
- runs each phase (augmentation search, training) with exactly the replica's
  environment (``env -i``) and the command line the keeper wrote for it
  (``argv-<phase>``: the replica's namespace, bwrap as the slot's uid, the
  per-line command script);
- records ``phase-<name>.json`` when a phase starts and ``exit.json`` at the
  end, which the tracking pass reads.

The variables every replica shares travel with ``sbatch --export``; the ones
that differ per replica (rank, ports) are set by its own script.
"""

from __future__ import annotations

import math
import re
import shlex
from dataclasses import dataclass
from pathlib import Path

from jobs.execution.files import LOG_NAME
from jobs.execution.replica.keeper import keeper_argv

REPLICA_SCRIPT = "slurm-replica.sh"
TRAINING = "training"
BASH = "/bin/bash"
# What the job's replicas get from Slurm rather than from Trainyard.
FROM_SLURM = ("CUDA_VISIBLE_DEVICES",)
VARIABLE_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


@dataclass(frozen=True)
class ReplicaPlan:
    """One replica of a Slurm job: where it runs and how."""

    index: int
    attempt_number: int
    attempt_folder: Path
    node_name: str  # "" when Slurm places it
    env: dict[str, str]
    phases: list[str]  # phase names, in order; the keeper writes each one's command line

    @property
    def script_path(self) -> Path:
        return self.attempt_folder / REPLICA_SCRIPT

    @property
    def log_path(self) -> Path:
        return self.attempt_folder / LOG_NAME


@dataclass(frozen=True)
class Request:
    """What one replica asks of its node; Slurm gets the same numbers."""

    cpu_milli: int
    memory_mib: int
    gres: str  # "gpu:v100:2", or "" for a CPU job
    runtime_minutes: int | None  # Slurm's --time; None when Trainyard enforces it itself
    warning_seconds: int
    nice: int = 0  # Trainyard's queue order among its jobs inside Slurm (``priority.py``)


def shared_environment(plans: list[ReplicaPlan]) -> dict[str, str]:
    """The variables with one value across every replica (all of them, for one replica)."""
    first, *others = plans
    return {k: v for k, v in first.env.items() if all(p.env.get(k) == v for p in others)}


def replica_script(
    plan: ReplicaPlan,
    *,
    shared: dict[str, str],
    request: Request,
    deadline_seconds: int | None,
    master_addresses: dict[str, str] | None = None,
) -> str:
    """``master_addresses``: for a gang Slurm places, each node's address as replicas
    reach it; MASTER_ADDR is then replica 0's node's (``master_address``)."""
    folder = shlex.quote(str(plan.attempt_folder))
    own = {k: v for k, v in plan.env.items() if shared.get(k) != v}
    names = sorted(set(plan.env) | set(FROM_SLURM))
    if bad := [name for name in names if not VARIABLE_NAME.fullmatch(name)]:
        raise ValueError(f"not variable names: {bad}")
    clean_env = " ".join(f'{name}="${{{name}-}}"' for name in names)
    lines = [
        "#!/bin/bash",
        f"# Trainyard job {plan.env.get('TRAINYARD_JOB_ID')}, replica {plan.index}, "
        f"attempt {plan.attempt_number}: written by Trainyard's Slurm executor.",
        f"folder={folder}",
        f'exec >>"$folder/{LOG_NAME}" 2>&1',
        *(f"export {name}={shlex.quote(value)}" for name, value in sorted(own.items())),
    ]
    lines += [
        _HELPERS,
        *(master_address(plan, master_addresses) if master_addresses is not None else []),
        f"trap 'echo \"[trainyard] Slurm: the max run time ends in about "
        f"{request.warning_seconds} s.\"' USR1",
        # This script outlives its phase, so that Slurm (which follows the process tree
        # under proctrack/linuxproc) still finds the phase's processes to kill.
        "trap on_term TERM",
        f'echo "[trainyard] job $TRAINYARD_JOB_ID replica {plan.index} attempt '
        f'{plan.attempt_number} on Slurm node $SLURMD_NODENAME (Slurm job $SLURM_JOB_ID)"',
    ]
    for name in plan.phases:
        if name == TRAINING and deadline_seconds:
            # As with the local runner: the max run time counts from training's start.
            lines.append(f"export TRAINYARD_DEADLINE=$(( $(date +%s) + {deadline_seconds} ))")
        lines.append(f'run_phase {name} env -i {clean_env} || finish "$status"')
    lines.append("finish 0")
    return "\n".join(lines) + "\n"


_HELPERS = r"""now() {  # sets $now: UTC to the microsecond, in bash >= 5 without a process
  local t=${EPOCHREALTIME-}
  if [ -z "$t" ]; then now=$(date -u +%Y-%m-%dT%H:%M:%S.%6N+00:00); return; fi
  TZ=UTC0 printf -v now '%(%Y-%m-%dT%H:%M:%S)T.%s+00:00' "${t%[.,]*}" "${t#*[.,]}"
}
note() {  # name, JSON body: written whole, then renamed, as the local runner does
  printf '%s\n' "$2" >"$folder/$1.json.partial" && mv -f "$folder/$1.json.partial" "$folder/$1.json"
}
stopping=0 child=
tree() {  # a process and everything under it
  local pid
  for pid in $(ps -o pid= --ppid "$1" 2>/dev/null); do tree "$pid"; done
  echo "$1"
}
on_term() {  # a TERM (a stop, the time limit, a failed peer): passed to the whole phase but
  stopping=1  # the sandbox itself ($child), whose death would kill the job before it saves
  if [ -n "$child" ]; then kill -TERM $(tree "$child" | grep -vx "$child") 2>/dev/null; fi
}
run_phase() {  # phase name, then env -i and the variables; waits through USR1 and a TERM
  local name=$1 argv; shift
  if [ "$stopping" = 1 ]; then stopped; fi
  mapfile -d '' -t argv <"$folder/argv-$name" || finish 1
  # Where Slurm started it: the node, and the node's own indices of its cards.
  where="\"node\": \"$SLURMD_NODENAME\", \"gpus\": \"${SLURM_JOB_GPUS-}\""
  now; note "phase-$name" "{\"started_at\": \"$now\", $where}"
  # bwrap reads its options from fd 9: the job's /proc shows no host path.
  "$@" "${argv[@]}" </dev/null 9<"$folder/bwrap-$name.args" &
  child=$!
  if [ "$stopping" = 1 ]; then on_term; fi  # the TERM came while the phase was being started
  while :; do
    wait "$child"; status=$?
    if [ "$status" -gt 128 ] && kill -0 "$child" 2>/dev/null; then continue; fi
    break
  done
  child=
  if [ "$stopping" = 1 ]; then stopped; fi
  return "$status"
}
stopped() {  # no exit.json after a TERM: Slurm's own state says how the replica ended
  echo "[trainyard] replica stopped: Slurm sent TERM"
  exit 143
}
finish() {
  local code=${1:-1}
  local summary="exit code $code"
  if [ "$code" -gt 128 ] && name=$(kill -l $((code - 128)) 2>/dev/null); then
    summary="exit code $code (SIG$name)"
  fi
  echo "[trainyard] replica finished: $summary"
  now; note exit "{\"exit_code\": $code, \"summary\": \"$summary\", \"ended_at\": \"$now\"}"
  exit "$code"
}"""


def master_address(plan: ReplicaPlan, addresses: dict[str, str]) -> list[str]:
    """Lines that set MASTER_ADDR from the node replica 0 runs on, which the batch script
    (on the allocation's first node, where Slurm also starts rank 0) names in
    ``$TRAINYARD_MASTER_NODE``; replica 0 checks that it is there. Neither variable
    reaches the job but MASTER_ADDR: the phases run with exactly the replica's names."""
    cases = " ".join(
        f"{shlex.quote(node)}) export MASTER_ADDR={shlex.quote(address)} ;;"
        for node, address in sorted(addresses.items())
    )
    lines = [
        f'case "${{TRAINYARD_MASTER_NODE-}}" in {cases} '
        '*) echo "[trainyard] replica 0 runs on ${TRAINYARD_MASTER_NODE-?}, '
        'which is no Slurm node Trainyard knows"; finish 1 ;; esac'
    ]
    if plan.index == 0:
        lines.append(
            '[ "$SLURMD_NODENAME" = "$TRAINYARD_MASTER_NODE" ] || { echo "[trainyard] '
            "replica 0 runs on $SLURMD_NODENAME, not on the first node of the allocation "
            '($TRAINYARD_MASTER_NODE)"; finish 1; }'
        )
    return lines


# The keeper runs as root: the Slurm job's own account where that is root, else through
# sudo, which a site allows for exactly the keeper (README, production).
KEEP = 'keep() { if [ "$EUID" = 0 ]; then exec "$@"; else exec sudo -n -- "$@"; fi; }'


def batch_script(plans: list[ReplicaPlan], *, request: Request, python: str) -> str:
    def keep(plan: ReplicaPlan) -> str:
        # The keeper learns its node from Slurm: the plan names none.
        return f'keep {shlex.join(keeper_argv(python, plan.attempt_folder))} "$SLURMD_NODENAME"'

    if len(plans) == 1:
        return f"#!/bin/bash\n{KEEP}\n{keep(plans[0])}\n"
    # Pinned, each replica goes to its node; placed by Slurm, to its rank.
    pinned = all(p.node_name for p in plans)
    on = '"$SLURMD_NODENAME"' if pinned else '"$SLURM_PROCID"'
    cases = " ".join(
        f"{shlex.quote(p.node_name) if pinned else p.index}) {keep(p)} ;;" for p in plans
    )
    dispatch = (
        f"{KEEP}; case {on} in {cases} esac; "
        'echo "[trainyard] no replica for node $SLURMD_NODENAME" >&2; exit 97'
    )
    srun = [
        "srun",
        "--kill-on-bad-exit=1",
        f"--nodes={len(plans)}",
        f"--ntasks={len(plans)}",
        "--ntasks-per-node=1",
        f"--cpus-per-task={cpus(request.cpu_milli)}",
        f"--mem={request.memory_mib}M",
        *([f"--gres={request.gres}"] if request.gres else []),
        "--export=ALL",
        BASH,
        "--noprofile",
        "--norc",
        "-c",
        dispatch,
    ]
    # srun runs as a child the batch shell waits for, so that Slurm's warning before the
    # time limit (USR1, to the batch shell only) is logged here and never forwarded to
    # the replicas, whose commands would die of it.
    return (
        "#!/bin/bash\n"
        f"trap 'echo \"[trainyard] Slurm: the max run time ends in about "
        f"{request.warning_seconds} s.\"' USR1\n"
        # The batch script runs on the allocation's first node, as srun's rank 0 does.
        + ("" if pinned else 'export TRAINYARD_MASTER_NODE="$SLURMD_NODENAME"\n')
        + f"{shlex.join(srun)} &\n"
        "child=$!\n"
        "while :; do\n"
        '  wait "$child"; status=$?\n'
        '  if [ "$status" -gt 128 ] && kill -0 "$child" 2>/dev/null; then continue; fi\n'
        '  exit "$status"\n'
        "done\n"
    )


def sbatch_argv(
    plans: list[ReplicaPlan],
    *,
    name: str,
    request: Request,
    partition: str,
    account: str,
    exclude: list[str] | tuple[str, ...] = (),
) -> list[str]:
    """``exclude``: nodes a job Slurm places must avoid (none for a pinned job)."""
    argv = [
        f"--job-name={name}",
        f"--nodes={len(plans)}",
        "--ntasks-per-node=1",
        f"--cpus-per-task={cpus(request.cpu_milli)}",
        f"--mem={request.memory_mib}M",
        # Exactly the tools' environment, which is the replicas' shared variables:
        # any other value would make Slurm load the service user's login environment.
        "--export=ALL",
        f"--output={plans[0].log_path}",
        "--open-mode=append",
        "--chdir=/",
        "--no-requeue",
    ]
    if all(p.node_name for p in plans):  # placed by Trainyard; else Slurm places it
        argv.append(f"--nodelist={','.join(p.node_name for p in plans)}")
    elif exclude:
        argv.append(f"--exclude={','.join(exclude)}")
    if request.gres:
        argv.append(f"--gres={request.gres}")
    if request.runtime_minutes:
        argv += [f"--time={request.runtime_minutes}", f"--signal=B:USR1@{request.warning_seconds}"]
    if request.nice:
        argv.append(f"--nice={request.nice}")
    if partition:
        argv.append(f"--partition={partition}")
    if account:
        argv.append(f"--account={account}")
    return argv


def cpus(cpu_milli: int) -> int:
    """Slurm counts whole CPUs; a fraction of a core asks for the whole core."""
    return max(1, math.ceil(cpu_milli / 1000))
