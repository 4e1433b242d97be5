#!/usr/bin/env bash
# What the test suite needs of this machine, made ready (idempotent; root): the Debian
# packages it runs for real, PostgreSQL and Redis started, and a second address they
# listen on. `make test` runs it as root (CI is `make test`); anyone else gets told.
set -euo pipefail

# System packages the tests use for real: bubblewrap (job sandbox), Slurm and
# munge (the Slurm backend), Chromium (browser tests), gettext (catalogues), umoci
# (the node's image cache: tests/test_image_cache.py), skopeo (the site's image store),
# buildah (Containerfiles), docker-registry (a registry to pull from: tests/test_images_add.py)
# and nginx (the port proxy: tests/test_port_proxy*.py).
APT_PACKAGES="bubblewrap nftables iproute2 slurm-wlm munge chromium gettext umoci skopeo buildah docker-registry nginx"
missing=$(for p in $APT_PACKAGES; do dpkg -s "$p" >/dev/null 2>&1 || echo "$p"; done)
if [ -n "$missing" ]; then
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $missing
fi

if ! pg_isready -h 127.0.0.1 -p 5432 -q; then
  pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql)" main start
  for _ in $(seq 30); do pg_isready -h 127.0.0.1 -p 5432 -q && break; sleep 1; done
fi
if ! redis-cli -h 127.0.0.1 -p 6379 ping >/dev/null 2>&1; then
  redis-server --daemonize yes --bind 127.0.0.1 --port 6379 --save '' --appendonly no
  for _ in $(seq 30); do redis-cli -h 127.0.0.1 -p 6379 ping >/dev/null 2>&1 && break; sleep 1; done
fi

# A second, non-loopback address that PostgreSQL and Redis listen on too, so the
# job-network tests prove a job reaches them on neither (tests/test_job_network.py).
SECOND_ADDRESS=10.250.0.1
ip link show ty-ci0 >/dev/null 2>&1 || ip link add ty-ci0 type bridge  # no dummy module everywhere
ip addr replace "$SECOND_ADDRESS/32" dev ty-ci0
ip link set ty-ci0 up
if ! pg_isready -h "$SECOND_ADDRESS" -p 5432 -q; then
  psql -h 127.0.0.1 -U postgres -qc "ALTER SYSTEM SET listen_addresses = 'localhost,$SECOND_ADDRESS'"
  pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql)" main restart
  for _ in $(seq 30); do pg_isready -h "$SECOND_ADDRESS" -p 5432 -q && break; sleep 1; done
fi
# The stand-in hosts of tests/test_job_network_hosts.py reach it from their own LAN.
HBA="$(psql -h 127.0.0.1 -U postgres -tAc 'show hba_file')"
if ! grep -q "10.251.0.0/24" "$HBA"; then
  echo "host all all 10.251.0.0/24 trust" >> "$HBA"
  psql -h 127.0.0.1 -U postgres -qc "SELECT pg_reload_conf()" >/dev/null
fi
# Protected mode answers only loopback clients; the second address is this machine's own.
redis-cli -h 127.0.0.1 -p 6379 CONFIG SET bind "127.0.0.1 $SECOND_ADDRESS" >/dev/null
redis-cli -h 127.0.0.1 -p 6379 CONFIG SET protected-mode no >/dev/null
