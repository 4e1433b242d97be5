#!/usr/bin/env bash
# A Slurm cluster on this one machine: munge, slurmctld and one `slurmd -N gpu0N`
# per node, each node with four declared V100 cards. gpu01-gpu04 form the
# partition `trainyard`; gpu05 waits in `spare` (an admin adds it to `trainyard`).
#
#   deploy/slurm-dev/slurm-dev.sh start    # idempotent; prints the SLURM_CONF line
#   deploy/slurm-dev/slurm-dev.sh status   # exit 0 when the controller answers and all nodes are up
#   deploy/slurm-dev/slurm-dev.sh stop     # stops slurmd, slurmctld (and munge if it started it)
#   deploy/slurm-dev/slurm-dev.sh env      # prints `export SLURM_CONF=...` for a shell
#   deploy/slurm-dev/slurm-dev.sh stop-controller   # only slurmctld (`start` brings it back)
#
# Everything (rendered config, state, spool, logs, fake GPU files) lives under
# $TRAINYARD_SLURM_DEV_DIR, by default var/slurm-dev in the checkout. Runs as root.
set -euo pipefail

HERE="$(cd "$(dirname "$0")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
DIR="${TRAINYARD_SLURM_DEV_DIR:-$ROOT/var/slurm-dev}"
# Ports of their own per state folder: two checkouts on one machine get two clusters.
CTLD_PORT="${TRAINYARD_SLURM_DEV_PORT:-$((16017 + $(printf '%s' "$DIR" | cksum | cut -d' ' -f1) % 700 * 10))}"
NODES="gpu01 gpu02 gpu03 gpu04 gpu05"
export SLURM_CONF="$DIR/etc/slurm.conf"

log() { echo "slurm-dev: $*" >&2; }

pid_alive() { [ -f "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null; }

render() {
  local host
  host="$(hostname -s)"
  mkdir -p "$DIR"/{etc,state,run,log}
  for node in $NODES; do
    mkdir -p "$DIR/dev/$node" "$DIR/spool/$node"
    for card in 0 1 2 3; do [ -e "$DIR/dev/$node/nvidia$card" ] || mknod "$DIR/dev/$node/nvidia$card" c 1 3 2>/dev/null || touch "$DIR/dev/$node/nvidia$card"; done
  done
  sed -e "s|@DIR@|$DIR|g" -e "s|@HOST@|$host|g" -e "s|@CTLD_PORT@|$CTLD_PORT|g" \
    -e "s|@NODE_PORT_1@|$((CTLD_PORT + 1))|g" -e "s|@NODE_PORT_2@|$((CTLD_PORT + 2))|g" \
    -e "s|@NODE_PORT_3@|$((CTLD_PORT + 3))|g" -e "s|@NODE_PORT_4@|$((CTLD_PORT + 4))|g" \
    -e "s|@NODE_PORT_5@|$((CTLD_PORT + 5))|g" \
    "$HERE/slurm.conf.in" >"$DIR/etc/slurm.conf"
  sed -e "s|@DIR@|$DIR|g" "$HERE/gres.conf.in" >"$DIR/etc/gres.conf"
  cp "$HERE/cgroup.conf" "$DIR/etc/cgroup.conf"
}

start_munge() {
  if munge -n </dev/null 2>/dev/null | unmunge >/dev/null 2>&1; then
    return
  fi
  install -d -o munge -g munge -m 0755 /run/munge
  runuser -u munge -- /usr/sbin/munged </dev/null >/dev/null 2>&1 9>&-
  touch "$DIR/run/munge-started-here"
  for _ in $(seq 50); do
    munge -n </dev/null 2>/dev/null | unmunge >/dev/null 2>&1 && return
    sleep 0.1
  done
  log "munged did not start"; exit 1
}

controller_up() { scontrol ping 2>/dev/null | grep -q 'is UP'; }

nodes_up() {
  # Every node answers (idle, mixed or allocated; not down, not "not responding").
  local states
  states="$(sinfo -h -N -o '%T' 2>/dev/null)" || return 1
  [ "$(echo "$states" | grep -cE '^(idle|mixed|allocated|completing|draining|drained)$')" \
    -eq "$(echo $NODES | wc -w)" ]
}

start() {
  mkdir -p "$DIR"
  exec 9>"$DIR/.start.lock"
  flock 9
  render
  start_munge
  if ! pid_alive "$DIR/run/slurmctld.pid"; then
    # Daemons get neither our output (a caller reading it would wait for them forever)
    # nor the start lock (fd 9: every later start would wait for it forever).
    /usr/sbin/slurmctld -f "$SLURM_CONF" </dev/null >/dev/null 2>&1 9>&-
  fi
  for _ in $(seq 100); do controller_up && break; sleep 0.1; done
  controller_up || { log "slurmctld did not answer; see $DIR/log/slurmctld.log"; exit 1; }
  for node in $NODES; do
    pid_alive "$DIR/run/slurmd-$node.pid" ||
      /usr/sbin/slurmd -f "$SLURM_CONF" -N "$node" </dev/null >/dev/null 2>&1 9>&-
  done
  # A node left down by an earlier unclean stop comes back here (drained ones stay drained).
  for node in $(sinfo -h -N -t down -o %N 2>/dev/null | sort -u); do
    scontrol update nodename="$node" state=resume 2>/dev/null || true
  done
  for _ in $(seq 300); do nodes_up && break; sleep 0.2; done
  nodes_up || { log "nodes did not come up:"; sinfo -N >&2; exit 1; }
  echo "export SLURM_CONF=$SLURM_CONF"
}

stop_pidfile() {
  local pidfile=$1
  pid_alive "$pidfile" || return 0
  local pid
  pid="$(cat "$pidfile")"
  kill "$pid"
  for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || return 0; sleep 0.1; done
  kill -9 "$pid" 2>/dev/null || true
}

stop() {
  for node in $NODES; do stop_pidfile "$DIR/run/slurmd-$node.pid"; done
  stop_pidfile "$DIR/run/slurmctld.pid"
  if [ -f "$DIR/run/munge-started-here" ]; then
    stop_pidfile /run/munge/munged.pid
    rm -f "$DIR/run/munge-started-here"
  fi
}

case "${1:-}" in
  start) start ;;
  stop) stop ;;
  stop-controller) stop_pidfile "$DIR/run/slurmctld.pid" ;;
  status) controller_up && nodes_up ;;
  env) echo "export SLURM_CONF=$SLURM_CONF" ;;
  *) echo "usage: $0 start|stop|stop-controller|status|env" >&2; exit 2 ;;
esac
